"""Metric rows: the one function that names a batch's metrics, and the two forms a `metrics.jsonl` row takes.

Every name a step logs is a constant below, written and read through it. Every backend logs
a batch through `batch_metrics(values, prefix)`: the names are the shared
ones (`tandem.rollout.contract`'s `senior_token_fraction`, ...) and only the prefix says where they
land: none in the embedded trainer's `metrics.jsonl`, `tandem/` in TRL's and verl's logs
(verl adds `actor/` in front of its workers' metrics). A row on disk is either `flat`,
`{"step": s, name: value, ...}` (the embedded trainer's default), or `verl`,
`{"step": s, "data": {name: value, ...}}` (verl's `file` logger); `read_metrics` reads both,
and reads the names older runs wrote under their present spelling (`tandem.io.legacy`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from tandem.io import legacy
from tandem.errors import TandemError

# The shared names of a batch's authorship statistics (`tandem.rollout.contract.RolloutStats.metrics`).
SENIOR_TOKEN_FRACTION = "senior_token_fraction"  # senior-written tokens / response tokens
MEAN_HANDOFFS = "mean_handoffs"  # authorship changes per response
JUNIOR_ONLY_RESPONSE_FRACTION = "junior_only_response_fraction"  # responses without a senior token
# The embedded trainer's per-step names (`tandem_app/train/`: its metrics.jsonl, console and summary).
REWARD_MEAN = "reward_mean"  # the verifier's mean reward
ACCURACY = "accuracy"  # responses the verifier scores correct (> 0.5)
REWARD_WITH_PARTNER_MEAN = "reward_with_partner_mean"  # what the advantages see with the partner reward on
RESPONSE_LENGTH = "resp_len"  # response tokens, mean
STOP_FRACTION = "stop_frac"  # responses that ended before the budget
ZERO_VARIANCE_GROUPS = "zero_var_groups"  # groups whose rewards are all equal (no GRPO signal)
TERSE_FRACTION = "terse_frac"  # the demo task's terse notation (`tandem_app.task.terse_share`)
VAL_ACCURACY = "val_acc"  # GRPO: the senior alone, greedy, on the validation problems
SFT_VAL_ACCURACY = "val_greedy_acc"  # SFT: the same measure of the base
LOSS = "loss"
GRAD_NORM = "grad_norm"  # before clipping
LR = "lr"
ELAPSED = "elapsed_s"  # SFT: seconds since the run began, every launch
LOGPROB_ENGINE_DIFF_MAX = "logprob_engine_diff_max"  # the largest gap between the engine's and the update's log-probs
JUNIOR_UPDATES = "junior_updates"  # times the following junior was updated this step
TIME_ROLLOUT = "time_rollout"  # seconds
TIME_UPDATE = "time_update"
TIME_STEP = "time_step"
TIME_PARTNER = "time_partner"  # the partner reward's share of the rollout
# The policy loss's names (`tandem.loss.grpo`, verl's spelling); the embedded trainer's log spells one otherwise.
PG_LOSS = "pg_loss"
PG_CLIPFRAC = "pg_clipfrac"  # the share of tokens whose ratio was clipped
PG_CLIPFRAC_LOWER = "pg_clipfrac_lower"  # ... at the dual-clip lower bound
PPO_KL = "ppo_kl"  # the mean of (old - new) log-probs
ENTROPY = "entropy"
KL_LOSS = "kl_loss"  # the KL penalty to the reference model
CLIPFRAC = "clipfrac"  # `pg_clipfrac` as the embedded trainer logs it
UPDATE_NAMES = {PG_CLIPFRAC: CLIPFRAC}
# The transfer reward's per-step names (`tandem.rewards.transfer_reward.TransferResult.metrics`), all under its prefix.
TRANSFER_PREFIX = "transfer/"
TRANSFER_REWARD_MEAN = TRANSFER_PREFIX + "reward_mean"  # R_transfer, mean over the responses
TRANSFER_RECEIVER_ACCURACY = TRANSFER_PREFIX + "receiver_acc"  # continuations the verifier scores correct (> 0.5)
TRANSFER_RECEIVER_TOKENS = TRANSFER_PREFIX + "receiver_tokens"  # continuation tokens kept, each cut to its own cap
TRANSFER_RECEIVER_TOKENS_DECODED = TRANSFER_PREFIX + "receiver_tokens_decoded"  # what the calls decoded
TRANSFER_RECEIVER_CALLS = TRANSFER_PREFIX + "receiver_calls"  # batched receiver calls
TRANSFER_CONTINUATIONS = TRANSFER_PREFIX + "continuations"  # continuations written
TRANSFER_CUT_FRACTION_ASKED = TRANSFER_PREFIX + "cut_fraction_asked"  # the cut fractions asked, mean
TRANSFER_CUT_FRACTION_USED = TRANSFER_PREFIX + "cut_fraction_used"  # each usable prefix's share of its response
TRANSFER_MOVED_BACK_FRACTION = TRANSFER_PREFIX + "moved_back_frac"  # cuts the leak rule moved back
TRANSFER_NO_ROOM_FRACTION = TRANSFER_PREFIX + "no_room_frac"  # cuts that kept no token
TRANSFER_UNDETERMINED_FRACTION = TRANSFER_PREFIX + "undetermined_frac"  # cuts whose gold was too short to locate
# The partner reward's per-step mean (`tandem.rewards.partner_score.step_metrics`); each term is logged as
# PARTNER_SCORE/<term> (`tandem.rewards.partner_config.TERMS`), and verl times its pass under this name.
PARTNER_SCORE = "partner_score"
# The names the tandem launchers add to verl's log (`tandem_verl`).
VERIFIER_SCORE = "critic/verifier_score/mean"  # the verifier alone, beside verl's critic/score/mean (then the sum)
JUNIOR_PREFIX = "junior/"  # a junior that follows the senior: its update's per-step metrics
JUNIOR_RESUMED_PREFIX = JUNIOR_PREFIX + "resumed_"  # the update a resumed run re-applies at its first step
GATED_JUNIOR_TOKENS = "gated_junior_tokens"  # verl: junior tokens the senior gate took out of the loss
SENIOR_ROLLOUT_DRIFT = "senior_rollout_probs_diff_max"  # verl: senior tokens' rollout-vs-trainer gap, worst a mini-batch
# The grader's health (`tandem.grading.grader.reward_health`), logged beside the reward by every trainer.
GRADER_PREFIX = "grader_"  # GRADER_PREFIX + each of `tandem.grading.grader.HEALTH_COUNTERS`
GRADER_CALLS = GRADER_PREFIX + "calls"
# Hugging Face TRL's own names, as its logs carry them into a run's rows (`hf_grpo.metrics_callback`).
TRL_REWARD = "reward"  # the summed reward functions' mean: present on a training step's log only
TRL_STEP_TIME = "step_time"
TRL_TRANSFER_REWARD = "transfer_reward"  # the transfer reward's function name: TRL logs rewards/<name>/mean
ROW_FORMS = ("flat", "verl")  # flat: {"step", name: value}; verl: {"step", "data": {name: value}}
TANDEM_PREFIX = "tandem/"  # the namespace of the tandem metrics in a shared log (TRL, verl)


def batch_metrics(values: Mapping[str, float], prefix: str = "") -> dict[str, float]:
    """`values` under `prefix`, as plain floats (tensors and numpy scalars are read out)."""
    return {prefix + name: (float(v) if hasattr(v, "item") else v) for name, v in values.items()}


def metrics_row(step: int, metrics: Mapping[str, float], form: str = "flat") -> dict:
    """The JSON object of one step's metrics in `form` (see `ROW_FORMS`)."""
    if form not in ROW_FORMS:
        raise TandemError(f"unknown metrics row form {form!r}; choose one of {', '.join(ROW_FORMS)}")
    return {"step": step, **metrics} if form == "flat" else {"step": step, "data": dict(metrics)}


def row_metrics(row: Mapping) -> tuple[int, dict]:
    """(step, {name: value}) of a row in either form, every legacy name under its present spelling."""
    data = row["data"] if isinstance(row.get("data"), Mapping) else {k: v for k, v in row.items() if k != "step"}
    return int(row["step"]), {legacy.metric_name(k): v for k, v in data.items()}


def read_metrics(path: str | os.PathLike) -> list[tuple[int, dict]]:
    """Every row of a metrics JSONL (embedded trainer, HF TRL example or verl's file logger), in file order."""
    path = Path(path)
    if not path.is_file():
        raise TandemError(f"{path}: no such metrics log; pass a run's metrics.jsonl (verl: trainer.logger=[...,file])")
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(row_metrics(json.loads(line)))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            raise TandemError(f"{path}:{lineno}: not a metrics row ({{\"step\": ..., ...}} or "
                              f"{{\"step\": ..., \"data\": {{...}}}})") from None
    return rows
