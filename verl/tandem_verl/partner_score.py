"""The partner score on verl (`partner_reward`): verl's reference worker, holding the junior, scores the senior.

Route (model_spec/SCALE.md, "The partner score on verl"): the rollout engine's junior
cannot give prompt log-probs (vLLM computes them from `compute_logits`, which returns the
senior's), so the scorer is verl's reference worker, built from the junior's checkpoint
(`tandem_verl.workers`; for the paper's self-paired junior that is verl's usual reference,
the senior's base). Per step, after verl's reference pass and before its advantages
(`TandemPPOTrainer._compute_advantage`):

1. the KL terms read what the step already computed: `old_log_probs` (the senior) and
   `ref_log_prob` (the junior), both at the rollout temperature, on the senior-written
   tokens (`authorship_mask`);
2. the target term needs the junior's log-probs of the target inside its own turn, after the
   explanation (`tandem.rewards.partner_score.target_sequences`): one more reference pass over rows
   built here from each sample (prompt := context, response := target), put into
   TransferQueue under keys of their own and cleared after;
3. each response's reward (`rm_scores`, at its last token, where verl put the verifier's)
   gains `weight * partner_score`, before verl computes the advantages.

With `writer_sees_solution=true` the writer read a prompt holding the solution, but the
junior reads the PLAIN question prompt (`plain_prompt_ids`, from `tandem_verl.solution_writer`):
the target pass reads plain prompt -> explanation -> solution, and a second pass reads plain
prompt -> response for the junior's own log-probs of the response in the KL terms
(`ref_log_prob` was read after the writer's prompt, which the junior never sees).

The terms and the score are `tandem.rewards.partner_score`'s functions. With `$TANDEM_PARTNER_TRACE`
naming a file, each scored response appends one JSON line (its tokens, the log-probs read
and the terms), so a test can recompute them offline.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import torch

from tandem.errors import TandemError
from tandem_verl.names import PLAIN_PROMPT
from tandem.io.metric_log import VERIFIER_SCORE, batch_metrics
from tandem.rewards.partner_config import PartnerRewardConfig
from tandem.rewards.partner_score import (
    check_fits,
    partner_score,
    partner_terms,
    step_metrics,
    target_sequences,
)

TRACE_ENV = "TANDEM_PARTNER_TRACE"
AUTHORSHIP = "authorship_mask"  # a tandem run's; a GRPO run has none
KEY_SUFFIX = "_partner_target"  # the target rows' TransferQueue keys: <sample key><suffix>
READ = ["prompts", "responses", "response_mask", "authorship_mask", "old_log_probs", "ref_log_prob", "rm_scores",
        "reward_model"]  # and extra_info for the `solution` target


def as_list(value) -> list:
    """A TransferQueue field as a Python list, one item per sample (nested tensors row by row)."""
    if isinstance(value, torch.Tensor):
        return list(value.unbind(0))
    return value.tolist() if hasattr(value, "tolist") else list(value)


def gold_of(reward_model, extra_info, target: str, row: int) -> str:
    """The text the junior is scored on: the gold answer (`answer`) or the row's worked solution (`solution`)."""
    if target == "answer":
        return str((reward_model or {})["ground_truth"])
    solution = (extra_info or {}).get("solution")
    if not solution:
        raise TandemError(f"partner_reward.target=solution: training row {row} has no extra_info.solution; prepare "
                          "the data with worked solutions or set partner_reward.target=answer")
    return str(solution)


def target_row(sample: dict, context: Sequence[int], target: Sequence[int]) -> dict:
    """A sample whose prompt is `context` and whose response is `target`, for one reference pass.

    Built as verl builds its padding samples (`trainer/ppo/padding_utils.py`): the sample's
    non-tensor fields are kept, its token fields replaced, its other tensor fields dropped.
    """
    from verl.trainer.ppo.padding_utils import build_padding_position_ids

    row = {k: v for k, v in sample.items() if not isinstance(v, torch.Tensor)}
    prompts = torch.tensor(list(context), dtype=torch.int64)
    responses = torch.tensor(list(target), dtype=torch.int64)
    input_ids = torch.cat([prompts, responses])
    mask = torch.ones_like(responses)
    row.update(prompts=prompts, responses=responses, input_ids=input_ids, response_mask=mask, loss_mask=mask,
               position_ids=build_padding_position_ids(sample.get("position_ids"), torch.ones_like(input_ids)),
               rm_scores=torch.zeros(len(target)), rollout_log_probs=torch.zeros(len(target)))
    return row


def padded(rows: Sequence[torch.Tensor], dtype=torch.float64) -> torch.Tensor:
    """[B, T]: per-row 1-D tensors, right-padded with 0."""
    width = max(1, max(int(r.numel()) for r in rows))
    out = torch.zeros(len(rows), width, dtype=dtype)
    for i, r in enumerate(rows):
        out[i, : r.numel()] = r.to(dtype)
    return out


def add_to_rewards(batch, rm_scores: Sequence[torch.Tensor], bonus: dict[int, float]) -> float:
    """Add `bonus[i]` to sample i's reward at its last token (where verl put the verifier's) and put the
    rewards back into TransferQueue; the verifier's mean over the samples `bonus` names, before."""
    import transfer_queue as tq
    from tensordict import TensorDict

    rows = [r.clone().float() for r in rm_scores]
    verifier = [float(rows[i].sum()) for i in bonus]
    for i, extra in bonus.items():
        rows[i][-1] += extra
    nested = torch.nested.as_nested_tensor(rows, layout=torch.jagged)
    tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id,
                    fields=TensorDict({"rm_scores": nested}, batch_size=len(batch)))
    return sum(verifier) / max(1, len(verifier))


def scorer_context(path: str, trust_remote_code: bool = False) -> int | None:
    """The context in tokens of the model verl's reference worker scores with (its HF config, as vLLM reads it)."""
    from transformers import AutoConfig

    from vllm_source.pairing import junior_context

    return junior_context(AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code))


class PartnerScorer:
    """Adds the partner score to a step's rewards on verl; see the module docstring."""

    def __init__(self, cfg: PartnerRewardConfig, tokenizer, temperature: float, context: int | None = None,
                 solo: bool = False) -> None:
        self.cfg, self.tokenizer, self.temperature = cfg, tokenizer, temperature
        self.context = context  # the scorer's context in tokens (`scorer_context`); None: not known, not checked
        self.solo = solo  # a GRPO run scored by its base: no authorship mask, the senior wrote every token

    def apply(self, trainer, batch, metrics: dict) -> None:
        """Score every sample of `batch` (a KVBatchMeta) and add `weight * score` to its reward in TransferQueue."""
        import transfer_queue as tq
        from verl.utils.tensordict_utils import list_of_dict_to_tensordict

        read = [f for f in READ if not (self.solo and f == AUTHORSHIP)]
        read += ["extra_info"] if self.cfg.target == "solution" else []
        read += [PLAIN_PROMPT] if self.cfg.writer_sees_solution else []
        data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=read)
        rows = {name: as_list(data[name]) for name in read}
        if self.solo:  # a GRPO run: every response token is the senior's
            rows[AUTHORSHIP] = rows["response_mask"]
        real = [i for i, tag in enumerate(batch.tags) if not tag.get("is_padding")]  # verl's no-op samples score 0
        extra = rows.get("extra_info", [None] * len(batch))
        golds = {i: gold_of(rows["reward_model"][i], extra[i], self.cfg.target, i) for i in real}
        prompts = rows[PLAIN_PROMPT] if self.cfg.writer_sees_solution else rows["prompts"]
        sequences = {i: target_sequences(self.tokenizer, prompts[i].tolist(), rows["responses"][i].tolist(),
                                         golds[i], self.cfg.target) for i in real}
        for i in real:  # before the extra reference pass: verl's forward would not refuse an overlong row
            check_fits(i, *sequences[i], self.context, self.cfg.target)
        if self.cfg.writer_sees_solution:  # the junior's log-probs of the response after the plain prompt (KL terms)
            # a pass of its own: the target's context holds the explanation without its end-of-turn token
            passes = {i: (prompts[i].tolist(), rows["responses"][i].tolist()) for i in real}
            read_lp = self._target_logprobs(trainer, batch, passes, tq, list_of_dict_to_tensordict)
            for i in real:
                rows["ref_log_prob"][i] = read_lp[i]
        target_lp = self._target_logprobs(trainer, batch, sequences, tq, list_of_dict_to_tensordict)

        terms = partner_terms(padded([target_lp[i] for i in real]),
                              padded([torch.ones(len(sequences[i][1])) for i in real]),
                              padded([rows["old_log_probs"][i] for i in real]),
                              padded([rows["ref_log_prob"][i] for i in real]),
                              padded([rows[AUTHORSHIP][i] for i in real]))
        score = partner_score(terms, self.cfg.coefficients())

        bonus = {i: float(self.cfg.weight * score[j]) for j, i in enumerate(real)}
        verifier = add_to_rewards(batch, rows["rm_scores"], bonus)
        metrics.update(batch_metrics({**step_metrics(terms, score), VERIFIER_SCORE: verifier}))
        self._trace(trainer, real, golds, sequences, rows, target_lp, terms, score)

    def _target_logprobs(self, trainer, batch, sequences: dict, tq, to_tensordict) -> dict[int, torch.Tensor]:
        """The junior's log-probs of each target after its context: one reference pass over rows of their own."""
        from verl.workers.utils.padding import response_from_nested

        samples = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id)
        keys, rows, tags = [], [], []
        for i, key in enumerate(batch.keys):  # every sample, so the rows split over ranks as the batch does
            context, target = sequences.get(i, ([self.tokenizer.eos_token_id], [self.tokenizer.eos_token_id]))
            keys.append(f"{key}{KEY_SUFFIX}")
            sample = samples[i]
            rows.append(target_row({k: sample[k] for k in sample.keys()}, context, target))
            tags.append({**batch.tags[i], "prompt_len": len(context), "response_len": len(target),
                         "seq_len": len(context) + len(target)})
        meta = tq.kv_batch_put(keys=keys, partition_id=batch.partition_id, fields=to_tensordict(rows), tags=tags)
        meta.extra_info = {**(batch.extra_info or {}), "calculate_entropy": False, "compute_loss": False,
                           "temperature": self.temperature}
        worker_group = trainer.actor_rollout_wg if trainer.ref_in_actor else trainer.ref_policy_wg
        try:
            worker_group.compute_ref_log_prob(meta)
            out = tq.kv_batch_get(keys=keys, partition_id=batch.partition_id, select_fields=["log_probs",
                                                                                            "response_mask"])
            logprobs = as_list(response_from_nested(out["log_probs"], out["response_mask"]))
        finally:
            tq.kv_clear(keys=keys, partition_id=batch.partition_id)
        return {i: logprobs[i].detach().double() for i in sequences}

    def _trace(self, trainer, real, golds, sequences, rows, target_lp, terms, score) -> None:
        path = os.environ.get(TRACE_ENV)
        if not path:
            return
        with open(path, "a", encoding="utf-8") as f:
            for j, i in enumerate(real):
                f.write(json.dumps({
                    "step": trainer.global_steps, "temperature": self.temperature, "target": self.cfg.target,
                    "gold": golds[i],
                    "prompt_ids": rows["prompts"][i].tolist(), "response_ids": rows["responses"][i].tolist(),
                    "context_ids": list(sequences[i][0]), "target_ids": list(sequences[i][1]),
                    "authorship_mask": rows[AUTHORSHIP][i].tolist(),
                    "senior_logprobs": rows["old_log_probs"][i].tolist(),
                    "junior_logprobs": rows["ref_log_prob"][i].tolist(),
                    "target_logprobs": target_lp[i].tolist(),
                    "terms": {k: float(v[j]) for k, v in terms.items()}, "score": float(score[j]),
                }) + "\n")
