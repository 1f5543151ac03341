"""One step's batch: the groups sampled and scored, and the batch's metrics.

`prompts_per_step` problems (a pure function of seed and step) get `group_size` responses
each. `tandem`: the senior and the junior co-write every response, authorship redrawn at
word boundaries; `grpo`: the senior alone. Both methods see the same problems and the same
sampling uniforms (`tandem.process.coins.request_key`). The verifier scores each response, and the
partner score, when on, is added to the reward the advantages see (the verifier's weighted by
`partner_reward.verifier_weight`: 0 in RLT's teacher reward, the score alone).

With `partner_reward.writer_sees_solution` the writer (the senior, or the team) reads RLT's
teacher prompt, the question and its solution, and the update trains on that prompt (the
batch's `prompts`: what the policy was conditioned on). The scorer reads the plain question
prompt, as RLT's student does: its target context, and for a team whose junior co-wrote, its
log-probs of the response for the KL terms, read again after the plain prompt.

With `partner_reward.kind=transfer` the partner reward is RLTR's transfer reward instead
(`tandem.rewards.transfer_reward`): the receiver (`scorer`: the junior, the GRPO run's base, or
`partner_reward.transfer.receiver`) continues each response's prefix (RLTR's uniform cut, or
the project's leak-free one: `partner_reward.transfer`'s rules) alone, through
a solo engine of its own, and only the grade comes back: the batch holds the writer's tokens
alone, so the receiver's never reach the loss.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch

from tandem.process.coins import request_key
from tandem.grading.grader import reward_health
from tandem.grading.grader import stats as grader_stats
from tandem.loss.logprobs import pad_right
from tandem.models.loading import load_receiver
from tandem.io.metric_log import (
    ACCURACY,
    MEAN_HANDOFFS,
    RESPONSE_LENGTH,
    REWARD_MEAN,
    REWARD_WITH_PARTNER_MEAN,
    SENIOR_TOKEN_FRACTION,
    STOP_FRACTION,
    TERSE_FRACTION,
    TIME_PARTNER,
    ZERO_VARIANCE_GROUPS,
    batch_metrics,
)
from tandem.rewards.partner_score import combined_reward, partner_rewards, read_after, step_metrics
from tandem.rollout.contract import rollout_stats
from tandem.rewards.transfer_reward import combined, run_transfer
from tandem_app.task import terse_share
from tandem_app.train.data import batch_indices
from tandem_app.train.train_config import TrainConfig
from tandem_backends.registry import build_backend


class GroupSampler:
    """Samples and scores one step's groups with the trainer's engine; `scorer` scores the partner reward.

    `prompts` are the plain question prompts; `writer_prompts` (one per problem, or None) are
    what the writer reads instead when it sees the solution.
    """

    def __init__(self, cfg: TrainConfig, engine, senior, tokenizer, problems: list, prompts: list,
                 reward_fn: Callable[[str, str], float], scorer, writer_prompts: list | None = None):
        self.cfg, self.engine, self.senior, self.tokenizer = cfg, engine, senior, tokenizer
        self.problems, self.prompts, self.reward_fn, self.scorer = problems, prompts, reward_fn, scorer
        self.writer_prompts = writer_prompts
        self._receiver = None  # kind=transfer: a solo engine over the scorer, built at first use
        if cfg.partner_reward.transfers and cfg.partner_reward.transfer.receiver:  # RLTR's separate frozen receiver
            self.scorer = load_receiver(cfg.partner_reward.transfer.receiver, tokenizer,
                                        senior.get_input_embeddings().num_embeddings, cfg.device)

    def __call__(self, step: int) -> dict:
        """The step's batch (CPU tensors + lists): responses, masks, token-level rewards, scores."""
        cfg = self.cfg
        idx = batch_indices(len(self.problems), cfg.prompts_per_step, cfg.seed, step)
        problems = [self.problems[i] for i in idx for _ in range(cfg.group_size)]
        prompts = [self.prompts[i] for i in idx for _ in range(cfg.group_size)]
        written = prompts if self.writer_prompts is None else [self.writer_prompts[i] for i in idx
                                                                for _ in range(cfg.group_size)]
        keys = [request_key(f"train/{step}/{self.problems[i].id}", j) for i in idx for j in range(cfg.group_size)]
        self.senior.eval()
        rollouts = self.engine.generate(written, cfg.sampling, keys, solo=not cfg.is_tandem,
                                        junior_logprobs=cfg.partner_reward.enabled and cfg.is_tandem
                                        and not cfg.partner_reward.transfers)
        self.senior.train()
        responses = [r.token_ids for r in rollouts]
        lengths = torch.tensor([len(r) for r in responses])
        T = int(lengths.max())
        health_before = grader_stats(this_thread=True)
        scores = torch.tensor([self.reward_fn(r.text, p.answer) for r, p in zip(rollouts, problems)])
        health = reward_health(health_before)
        rewards, partner_metrics = self._with_partner_score(scores, problems, prompts, rollouts, keys)
        token_rewards = torch.zeros(len(rollouts), T)
        token_rewards[torch.arange(len(rollouts)), lengths - 1] = rewards
        batch = {
            "verifier_scores": scores,
            "reward_health": health,
            "partner_metrics": partner_metrics,
            "prompts": written,  # what the writer read: the update's log-probs are conditioned on it
            "responses": pad_right(responses, self.tokenizer.pad_token_id, length=T),
            "response_mask": (torch.arange(T)[None] < lengths[:, None]).float(),
            "token_level_rewards": token_rewards,
            "engine_log_probs": pad_right([r.senior_logprobs for r in rollouts], 0.0, torch.float32, length=T),
            "index": [p.id for p in problems],
            "finish_stop": [r.finish_reason == "stop" for r in rollouts],
            "response_token_lists": responses,
            "texts": [r.text for r in rollouts],
        }
        if cfg.is_tandem:
            batch["authorship_mask"] = pad_right([r.authorship_mask for r in rollouts], 0, length=T)
        return batch

    def _with_partner_score(self, scores: torch.Tensor, problems, prompts, rollouts, keys) -> tuple[torch.Tensor, dict]:
        """(the rewards the advantages see, the partner score's metrics); the verifier's alone when it is off."""
        partner = self.cfg.partner_reward
        if not partner.enabled:
            return scores, {}
        if partner.transfers:
            return self._with_transfer(scores, problems, prompts, rollouts, keys)
        t0 = time.time()
        golds = [p.answer if partner.target == "answer" else p.solution for p in problems]
        if partner.writer_sees_solution and self.cfg.is_tandem:
            rollouts = read_after(self.scorer, prompts, rollouts, self.tokenizer.pad_token_id,
                                  self.cfg.sampling.logprob_temperature)
        score, terms = partner_rewards(partner, self.scorer, self.tokenizer, prompts, rollouts, golds,
                                       self.cfg.sampling.logprob_temperature,
                                       scorer_wrote_with_engine=self.cfg.is_tandem)
        rewards = combined_reward(scores.double(), score, partner.weight, partner.verifier_weight).float()
        return rewards, {**step_metrics(terms, score), TIME_PARTNER: time.time() - t0}

    def _with_transfer(self, scores: torch.Tensor, problems, prompts, rollouts, keys) -> tuple[torch.Tensor, dict]:
        """RLTR's reward: verifier_weight * verifier + weight * R_transfer, and the step's `transfer/*` metrics."""
        cfg, partner = self.cfg, self.cfg.partner_reward
        t0 = time.time()
        if self._receiver is None:  # the receiver writes alone: an engine of its own, no junior
            self._receiver = build_backend("engine", self.scorer, None, cfg.tandem, tokenizer=self.tokenizer,
                                           mode=cfg.engine_mode)
        # the receiver reads the plain question (`prompts`), as the deployed model would, never the writer's prompt
        done = run_transfer(partner.transfer, self._receiver, self.tokenizer, prompts, [r.token_ids for r in rollouts],
                            [p.answer for p in problems], keys, cfg.sampling, cfg.sampling.max_new_tokens,
                            self.reward_fn)
        rewards = torch.tensor([combined(float(v), r, partner.weight, partner.verifier_weight)
                                for v, r in zip(scores.tolist(), done.scores)])
        return rewards, {**done.metrics(), TIME_PARTNER: time.time() - t0}


def rollout_metrics(batch: dict, group_size: int) -> dict:
    """Reward (`reward_mean`: the verifier's), authorship, length and partner-score statistics of one batch."""
    mask, scores = batch["response_mask"], batch["verifier_scores"]
    authorship = batch.get("authorship_mask")
    stats = rollout_stats(mask if authorship is None else authorship, mask).metrics()  # grpo: the senior wrote all
    rewards = batch["token_level_rewards"].sum(-1)  # what the advantages see (verifier + partner score)
    terse = terse_share(batch.get("texts", []))
    return batch_metrics({
        **({} if math.isnan(terse) else {TERSE_FRACTION: terse}),  # the demo task's notation (tandem_app.task)
        REWARD_MEAN: scores.mean(),
        ACCURACY: (scores > 0.5).float().mean(),
        SENIOR_TOKEN_FRACTION: stats[SENIOR_TOKEN_FRACTION],
        MEAN_HANDOFFS: stats[MEAN_HANDOFFS],
        RESPONSE_LENGTH: mask.sum(-1).mean(),
        STOP_FRACTION: sum(batch["finish_stop"]) / len(batch["finish_stop"]),
        ZERO_VARIANCE_GROUPS: (rewards.view(-1, group_size).std(-1) == 0).float().mean(),
        **batch.get("reward_health", {}),  # grader calls cut short (time bound, length cap, errors)
        **({REWARD_WITH_PARTNER_MEAN: rewards.mean(), **batch["partner_metrics"]}
           if batch.get("partner_metrics") else {}),
    })
