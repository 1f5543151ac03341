"""GRPO on the synthetic task, with solo (`grpo`) or tandem (`tandem`, alias `trl`) rollouts.

One step, as verl computes it for the paper's configuration:
1. Pick `prompts_per_step` problems (a pure function of seed and step) and sample
   `group_size` responses each. `tandem`: the senior and the frozen junior (the pre-RL
   base) co-write every response, authorship redrawn at word boundaries
   (`selection_strategy=word, prob_senior=0.5, max_gap_tokens=32`); `grpo`: the senior
   alone. Both methods see the same problems and the same sampling uniforms.
2. Reward each response with the verifier; advantage = (r - group mean) / (group std + eps).
3. PPO clipped surrogate against the old log-probs, `token-mean` aggregated, with every
   per-token term weighted by `token_weights`: 1 senior, `loss.junior_token_loss_weight`
   (default 0) junior, divided by `loss.loss_denominator` (default `senior_tokens`; the
   release's runs: `all_response_tokens`). No KL and no entropy bonus by default.
Validation is the senior solo (greedy) on held-out problems.

Departures from verl, all for a single CPU process: one optimizer step per mini-batch
with no micro-batching; with one epoch and one mini-batch the old log-probs are the
first forward's (detached), which is exactly the ratio-1 on-policy update verl makes;
otherwise they are recomputed before the update. The engine's own `senior_logprobs`
(KV-cached decoding) agree with the recompute only to ~1e-5, so they are not used as
old log-probs; their largest gap is logged as `logprob_engine_diff_max`.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

import torch
from tqdm.auto import tqdm

from tandem import legacy
from tandem.coins import request_key
from tandem.config import ENGINE_MODES, TandemConfig
from tandem.config_files import config_to_dict
from tandem.engine import TandemEngine
from tandem import run_lock
from tandem.errors import RunFailed, RunInterrupted, TandemError
from tandem.grading import reward
from tandem.grading.grader import reward_health
from tandem.grading.grader import stats as grader_stats
from tandem.grpo import actor_loss, get_adv_estimator_fn
from tandem.senior_gate import require_authorship_mask, token_weights
from tandem.loss_config import PolicyLossConfig
from tandem.jsonl import read_jsonl, write_json
from tandem.junior_update import after_optimizer_step, check_self_paired
from tandem.logprobs import join_prompt_response, pad_right, response_logprobs
from tandem.models import check_same_vocab, load_model, load_tokenizer
from tandem.partner_score import PartnerRewardConfig, combined_reward, step_metrics
from tandem.partner_score import partner_rewards
from tandem.rollout import MEAN_HANDOFFS, SENIOR_TOKEN_FRACTION, rollout_stats
from tandem.sampling import SamplingConfig
from tandem_app.task import TaskConfig, generate_problems, terse_share
from tandem_app.train.checkpoint import (
    kept_words,
    restore_checkpoint,
    save_checkpoint,
    save_pretrained_atomic,
    stopped_words,
)
from tandem_app.train.data import batch_indices, prompt_ids_batch
from tandem_app.train.evaluate import greedy_solo_accuracy
from tandem_app.train.finite import (
    NonFiniteStep,
    check_finite_numbers,
    check_non_negative,
    check_positive,
    check_step_finite,
)
from tandem_app.train.metrics import MetricsLogger, wandb_settings
from tandem_app.train.resume import start_run
from tandem_app.train.schedule import lr_at

log = logging.getLogger(__name__)

METHODS = ("tandem", "grpo")
SUMMARY = "summary.json"
CONSOLE_KEYS = (
    "reward_mean",
    "val_acc",
    "terse_frac",
    SENIOR_TOKEN_FRACTION,
    MEAN_HANDOFFS,
    "resp_len",
    "loss",
    "clipfrac",
    "grad_norm",
    "time_step",
)


@dataclass
class TrainConfig:
    """GRPO / TRL training of a senior initialised from the pre-RL base."""

    method: str = "tandem"  # tandem (alias trl: rollouts co-written with the frozen base) | grpo (solo rollouts)
    model: str = ""  # the pre-RL base: senior initialisation and, for trl, the junior (see tandem.junior_model)
    out: str = ""  # run directory
    seed: int = 0
    steps: int = 80
    prompts_per_step: int = 32
    group_size: int = 4  # responses per prompt (GRPO's n)
    lr: float = 5e-5
    warmup_steps: int = 0
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    ppo_epochs: int = 1
    ppo_mini_batches: int = 2  # optimizer steps per epoch
    adv_estimator: str = "grpo"
    adv_epsilon: float = 1e-6
    norm_adv_by_std: bool = True
    n_train_problems: int = 5000
    n_val_problems: int = 128
    val_every: int = 10  # 0 = only at the end
    save_every: int = 10
    engine_mode: str = "auto"  # reference engine decoding: auto | paired | lockstep | lazy (same tokens)
    device: str = "cpu"
    threads: int = 0  # torch CPU threads; 0 = torch's default
    wandb: bool = False
    wandb_project: str = "tandem-rlvr"
    wandb_mode: str = "offline"
    sampling: SamplingConfig = field(default_factory=lambda: SamplingConfig(max_new_tokens=160))  # rollouts
    tandem: TandemConfig = field(default_factory=TandemConfig)
    loss: PolicyLossConfig = field(default_factory=PolicyLossConfig)
    task: TaskConfig = field(default_factory=TaskConfig)
    partner_reward: PartnerRewardConfig = field(default_factory=PartnerRewardConfig)  # weight 0 = off

    MOVED: ClassVar[dict[str, str]] = legacy.TRAIN_MOVED

    def __post_init__(self):
        for section in ("tandem", "sampling"):
            if getattr(self, section).seed not in (0, self.seed):
                raise TandemError(f"{section}.seed={getattr(self, section).seed} but seed={self.seed}: a run has one "
                                  "seed; set seed only")
        self.tandem = replace(self.tandem, seed=self.seed)
        self.sampling = replace(self.sampling, seed=self.seed)
        self.method = legacy.METHOD_NAMES.get(self.method, self.method)
        if self.method not in METHODS:
            raise TandemError(f"unknown method {self.method!r}; choose tandem (alias trl) or grpo")
        check_finite_numbers(self, "train")
        for name in ("steps", "prompts_per_step", "group_size", "ppo_epochs", "ppo_mini_batches", "n_train_problems",
                     "n_val_problems", "save_every"):
            if getattr(self, name) < 1:
                raise TandemError(f"train: {name} must be >= 1, got {getattr(self, name)}")
        check_positive(self, "train", ("lr", "grad_clip"))
        check_non_negative(self, "train", ("warmup_steps", "weight_decay", "adv_epsilon", "val_every", "threads"))
        if self.engine_mode not in ENGINE_MODES:
            raise TandemError(f"unknown engine_mode {self.engine_mode!r}; choose one of {', '.join(ENGINE_MODES)}")
        if self.prompts_per_step * self.group_size < self.ppo_mini_batches:
            raise TandemError("train: ppo_mini_batches exceeds the number of responses per step")

    @property
    def is_tandem(self) -> bool:
        return self.method == "tandem"


class GRPOTrainer:
    """Holds the senior, the junior (frozen unless tandem.junior_update), the base, the engine and the optimizer."""

    def __init__(self, cfg: TrainConfig, reward_fn: Callable[[str, str], float] = reward, progress: bool = True):
        if not cfg.model:
            raise TandemError("train needs model=DIR: the pre-RL base (e.g. OUT/model of `tandem-rlvr sft`)")
        if not cfg.out:
            raise TandemError("train needs out=DIR (or --out DIR), the run directory")
        run_lock.check_out_path(cfg.out)
        self.cfg, self.reward_fn, self.progress = cfg, reward_fn, progress
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        torch.manual_seed(cfg.seed)
        self.tokenizer = load_tokenizer(cfg.model)
        self.senior = load_model(cfg.model, device=cfg.device)
        self.senior.requires_grad_(True)
        # Frozen, eval mode: the pre-RL base (KL reference) and the junior (the base unless
        # tandem.junior_model names another model of the same vocabulary).
        needs_base = cfg.is_tandem or cfg.loss.use_kl_loss or cfg.partner_reward.enabled  # GRPO: the base scores
        self.base = load_model(cfg.model, device=cfg.device) if needs_base else None
        # A junior that follows the senior (tandem.junior_update) is a copy of the base of its
        # own: the base stays the KL reference. A GRPO run has no junior and ignores the rule.
        self.junior_update = cfg.tandem.junior_update_rule if cfg.is_tandem else None
        self.junior = None
        if cfg.is_tandem:
            check_self_paired(self.junior_update, cfg.model, cfg.tandem.junior_model)
            other = cfg.tandem.junior_model and cfg.tandem.junior_model != cfg.model
            self.junior = load_model(cfg.tandem.junior_model, device=cfg.device) if other else self.base
            if other:
                check_same_vocab(self.tokenizer, load_tokenizer(cfg.tandem.junior_model))
            if not self.junior_update.frozen:
                self.junior = copy.deepcopy(self.base)
        junior = self.junior
        self.engine = TandemEngine(self.senior, junior, self.tokenizer, tandem=cfg.tandem, mode=cfg.engine_mode)
        self.opt = torch.optim.AdamW(
            self.senior.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.999)
        )
        self.train_problems = generate_problems("train", cfg.n_train_problems, cfg.seed, cfg.task)
        self.train_prompts = prompt_ids_batch(self.tokenizer, self.train_problems)
        self.val_problems = generate_problems("validation", cfg.n_val_problems, cfg.seed, cfg.task)
        self.sampling = cfg.sampling

    # --- one step -------------------------------------------------------------------

    def rollout(self, step: int) -> dict:
        """Sample the step's groups and score them; returns the batch (CPU tensors + lists)."""
        cfg = self.cfg
        idx = batch_indices(len(self.train_problems), cfg.prompts_per_step, cfg.seed, step)
        problems = [self.train_problems[i] for i in idx for _ in range(cfg.group_size)]
        prompts = [self.train_prompts[i] for i in idx for _ in range(cfg.group_size)]
        keys = [request_key(f"train/{step}/{self.train_problems[i].id}", j) for i in idx for j in range(cfg.group_size)]
        partner = cfg.partner_reward
        self.senior.eval()
        rollouts = self.engine.generate(prompts, self.sampling, keys, solo=not cfg.is_tandem,
                                        junior_logprobs=partner.enabled and cfg.is_tandem)
        self.senior.train()
        responses = [r.token_ids for r in rollouts]
        lengths = torch.tensor([len(r) for r in responses])
        T = int(lengths.max())
        response_mask = (torch.arange(T)[None] < lengths[:, None]).float()
        health_before = grader_stats(this_thread=True)
        scores = torch.tensor([self.reward_fn(r.text, p.answer) for r, p in zip(rollouts, problems)])
        health = reward_health(health_before)
        rewards, partner_metrics = scores, {}
        if partner.enabled:
            t0 = time.time()
            golds = [p.answer if partner.target == "answer" else p.solution for p in problems]
            scorer = self.junior if cfg.is_tandem else self.base
            score, terms = partner_rewards(partner, scorer, self.tokenizer, prompts, rollouts, golds,
                                           self.sampling.logprob_temperature, scorer_wrote_with_engine=cfg.is_tandem)
            rewards = combined_reward(scores.double(), score, partner.weight).float()
            partner_metrics = {**step_metrics(terms, score), "time_partner": time.time() - t0}
        token_rewards = torch.zeros(len(rollouts), T)
        token_rewards[torch.arange(len(rollouts)), lengths - 1] = rewards
        batch = {
            "verifier_scores": scores,
            "reward_health": health,
            "partner_metrics": partner_metrics,
            "prompts": prompts,
            "responses": pad_right(responses, self.tokenizer.pad_token_id, length=T),
            "response_mask": response_mask,
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

    def _model_inputs(self, batch: dict, rows: slice | None = None):
        rows = rows or slice(None)
        input_ids, attention, response_index = join_prompt_response(
            batch["prompts"][rows], batch["response_token_lists"][rows], self.tokenizer.pad_token_id
        )
        T = batch["responses"].shape[1]
        if response_index.shape[1] < T:  # a mini-batch whose responses are all shorter than the batch's
            response_index = torch.nn.functional.pad(response_index, (0, T - response_index.shape[1]))
        dev = self.cfg.device
        return input_ids.to(dev), attention.to(dev), response_index.to(dev)

    @torch.no_grad()
    def _logprobs_no_grad(self, model, batch: dict) -> torch.Tensor:
        return response_logprobs(model, *self._model_inputs(batch), temperature=self.sampling.logprob_temperature)[0]

    def update(self, batch: dict, step: int) -> dict:
        """GRPO advantages and the PPO update(s) of the senior on one batch."""
        cfg, dev = self.cfg, self.cfg.device
        authorship = require_authorship_mask(batch, tandem=cfg.is_tandem)
        response_mask = batch["response_mask"]
        junior_weight = cfg.loss.junior_token_loss_weight if cfg.is_tandem else 0.0
        weights = token_weights(authorship, response_mask, junior_weight).to(dev)
        adv, _ = get_adv_estimator_fn(cfg.adv_estimator)(
            batch["token_level_rewards"], response_mask, batch["index"], cfg.adv_epsilon, cfg.norm_adv_by_std
        )
        adv = adv.to(dev)
        on_policy = cfg.ppo_epochs == 1 and cfg.ppo_mini_batches == 1
        old = None if on_policy else self._logprobs_no_grad(self.senior, batch)
        ref = self._logprobs_no_grad(self.base, batch) if cfg.loss.use_kl_loss else None
        lr = lr_at(step, cfg.lr, cfg.warmup_steps, cfg.steps, 1.0) if cfg.warmup_steps else cfg.lr
        for g in self.opt.param_groups:
            g["lr"] = lr
        B = response_mask.shape[0]
        bounds = torch.linspace(0, B, cfg.ppo_mini_batches + 1).round().long().tolist()
        history, junior_updates = [], 0
        optimizer_step = step * cfg.ppo_epochs * cfg.ppo_mini_batches  # done before this update (steps from 0)
        # How far the engine's KV-cached log-probs are from the recompute (diagnostic only).
        engine_diff = 0.0 if old is None else _max_abs_diff(old, batch["engine_log_probs"], weights)
        for _ in range(cfg.ppo_epochs):
            for lo, hi in zip(bounds, bounds[1:]):
                rows = slice(lo, hi)
                logp, entropy = response_logprobs(
                    self.senior,
                    *self._model_inputs(batch, rows),
                    temperature=self.sampling.logprob_temperature,
                    with_entropy=True,
                    entropy_grad=cfg.loss.entropy_coeff != 0,
                )
                if old is None:  # on-policy: one epoch, one mini-batch
                    engine_diff = _max_abs_diff(logp.detach(), batch["engine_log_probs"], weights)
                old_mb = logp.detach() if old is None else old[rows]
                loss, m = actor_loss(
                    cfg.loss, logp, old_mb, adv[rows], weights[rows], entropy, None if ref is None else ref[rows],
                    response_mask=response_mask[rows].to(dev),
                )
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                m["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(self.senior.parameters(), cfg.grad_clip))
                m["loss"] = loss.item()
                check_step_finite(m["loss"], m["grad_norm"])  # before the update: the weights stay finite
                self.opt.step()
                optimizer_step += 1
                if self.junior_update is not None:
                    junior_updates += after_optimizer_step(self.junior_update, self.junior, self.senior, optimizer_step)
                history.append(m)
        out = {k: sum(h[k] for h in history) / len(history) for k in history[0]}
        out["lr"], out["logprob_engine_diff_max"] = lr, engine_diff
        if self.junior_update is not None and not self.junior_update.frozen:
            out["junior_updates"] = float(junior_updates)
        return out

    def step(self, step: int) -> dict:
        t0 = time.time()
        batch = self.rollout(step)
        t1 = time.time()
        m = self.update(batch, step)
        t2 = time.time()
        return {
            **rollout_metrics(batch, self.cfg.group_size),
            **_rename(m),
            "time_rollout": t1 - t0,
            "time_update": t2 - t1,
            "time_step": t2 - t0,
        }

    def validate(self) -> float:
        return greedy_solo_accuracy(self.senior, self.tokenizer, self.val_problems, self.cfg.sampling.max_new_tokens)

    # --- the run ----------------------------------------------------------------------

    def train(self, resume: bool = False) -> dict:
        """Run (or continue) to `cfg.steps` holding OUT's lock; checkpoint, log, save OUT/model and the summary."""
        with run_lock.hold(self.cfg.out):
            return self._train(Path(self.cfg.out), resume)

    def _train(self, out: Path, resume: bool) -> dict:
        cfg, config = self.cfg, config_to_dict(self.cfg)
        start = start_run(out, config, resume)
        if start.finished is not None:
            return start.finished
        log.info("%s loss settings: %s", cfg.method, cfg.loss.tandem_settings())
        if self.progress:
            print(f"{cfg.method}: " + ", ".join(f"loss.{k}={v}" for k, v in cfg.loss.tandem_settings().items()))
        updating_junior = None if self.junior_update is None or self.junior_update.frozen else self.junior
        earlier = 0.0  # wall time of the launches before this one, up to their last checkpoint
        if start.state is not None:
            restore_checkpoint(start.state, self.senior, self.opt, junior=updating_junior)
            earlier = start.state.get("extra", {}).get("elapsed_s", 0.0)
        wandb = wandb_settings(cfg, out, f"{cfg.method}-{out.name}")
        logger = MetricsLogger(out / "metrics.jsonl", resume_step=start.step if start.state else None,
                               console=self.progress, console_keys=CONSOLE_KEYS, wandb=wandb)
        t0 = time.time()
        try:
            if start.step == 0:
                logger.log(0, {"val_acc": self.validate()})
            self._loop(out, start.step, logger, lambda: {"config": config, "elapsed_s": earlier + time.time() - t0},
                       updating_junior)
        except KeyboardInterrupt:
            raise RunInterrupted(kept_words(out, logger.last_step, cfg.steps)) from None
        finally:
            logger.close()
        save_pretrained_atomic(self.senior, self.tokenizer, out / "model")
        final = next(r for r in reversed(read_jsonl(out / "metrics.jsonl")) if r["step"] == cfg.steps)
        summary = {
            "phase": "train",
            "method": cfg.method,
            "steps": cfg.steps,
            "model": str(out / "model"),
            "grader": "tandem.grading.grade",
            "final_reward": final["reward_mean"],  # the verifier's mean reward at the last step
            "val_acc": final["val_acc"],  # the senior alone, greedy, after the last step
            "senior_fraction": final[SENIOR_TOKEN_FRACTION],  # of the last step's response tokens
            "wall_seconds": earlier + time.time() - t0,  # every launch, each up to its last checkpoint
            "train_seconds": time.time() - t0,  # this launch
        }
        write_json(out / SUMMARY, summary)
        return summary

    def _loop(self, out: Path, start: int, logger: MetricsLogger, extra: Callable[[], dict], updating_junior) -> None:
        cfg = self.cfg
        bar = tqdm(range(start, cfg.steps), initial=start, total=cfg.steps, desc=cfg.method, disable=not self.progress)
        for step in bar:
            try:
                m = self.step(step)
            except NonFiniteStep as e:
                raise RunFailed(f"step {step + 1}: {e.what} is not finite; stopped before the update "
                                f"({stopped_words(out)}); lower lr and start a new --out") from None
            done = step + 1
            if (cfg.val_every and done % cfg.val_every == 0) or done == cfg.steps:
                m["val_acc"] = self.validate()
            logger.log(done, m)
            bar.set_postfix(reward=f"{m['reward_mean']:.3f}")
            if done % cfg.save_every == 0 or done == cfg.steps:
                save_checkpoint(out, self.senior, self.opt, done, extra=extra(), junior=updating_junior)
        bar.close()


def rollout_metrics(batch: dict, group_size: int) -> dict:
    """Reward (`reward_mean`: the verifier's), authorship, length and partner-score statistics of one batch."""
    mask, scores = batch["response_mask"], batch["verifier_scores"]
    authorship = batch.get("authorship_mask")
    stats = rollout_stats(mask if authorship is None else authorship, mask).metrics()  # grpo: the senior wrote all
    rewards = batch["token_level_rewards"].sum(-1)  # what the advantages see (verifier + partner score)
    terse = terse_share(batch.get("texts", []))
    return {
        **({} if math.isnan(terse) else {"terse_frac": terse}),  # the demo task's notation (tandem_app.task)
        "reward_mean": scores.mean().item(),
        "accuracy": (scores > 0.5).float().mean().item(),
        SENIOR_TOKEN_FRACTION: stats[SENIOR_TOKEN_FRACTION],
        MEAN_HANDOFFS: stats[MEAN_HANDOFFS],
        "resp_len": mask.sum(-1).mean().item(),
        "stop_frac": sum(batch["finish_stop"]) / len(batch["finish_stop"]),
        "zero_var_groups": (rewards.view(-1, group_size).std(-1) == 0).float().mean().item(),
        **batch.get("reward_health", {}),  # grader calls cut short (time bound, length cap, errors)
        **({"reward_with_partner_mean": rewards.mean().item(), **batch["partner_metrics"]}
           if batch.get("partner_metrics") else {}),
    }


def _rename(m: dict) -> dict:
    names = {"pg_clipfrac": "clipfrac"}
    return {names.get(k, k): v for k, v in m.items()}


def _max_abs_diff(a: torch.Tensor, b: torch.Tensor, weights: torch.Tensor) -> float:
    valid = weights.cpu() > 0
    return (a.cpu() - b.to(a.dtype))[valid].abs().max().item() if bool(valid.any()) else 0.0
