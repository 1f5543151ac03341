"""`tandem.io.metric_log`: every step name a constant, one naming function for batch logs, two row forms, one reader."""

import json
import re
from pathlib import Path

import pytest
import torch

from tandem.io import metric_log
from tandem.errors import TandemError
from tandem.grading.grader import HEALTH_METRICS
from tandem.loss.grpo import actor_loss
from tandem.loss.loss_config import PolicyLossConfig
from tandem.io.metric_log import (
    MEAN_HANDOFFS,
    SENIOR_TOKEN_FRACTION,
    TANDEM_PREFIX,
    batch_metrics,
    metrics_row,
    read_metrics,
    row_metrics,
)
from tandem.rollout.contract import stats_of_masks


def test_batch_metrics_puts_the_shared_names_under_a_prefix_as_plain_floats():
    out = batch_metrics({SENIOR_TOKEN_FRACTION: torch.tensor(0.25), "x": 1.5}, TANDEM_PREFIX)
    assert out == {"tandem/senior_token_fraction": 0.25, "tandem/x": 1.5}
    assert all(type(v) is float for v in out.values())


def test_rollout_statistics_are_named_by_batch_metrics_whatever_the_prefix():
    stats = stats_of_masks([[1, 1, 0, 0], [0, 0]])
    assert stats.metrics() == {SENIOR_TOKEN_FRACTION: 2 / 6, MEAN_HANDOFFS: 0.5, "junior_only_response_fraction": 0.5}
    assert stats.metrics("actor/tandem/") == batch_metrics(stats.metrics(), "actor/tandem/")


@pytest.mark.parametrize("form", ["flat", "verl"])
def test_both_row_forms_read_back_alike(tmp_path, form):
    path = tmp_path / "metrics.jsonl"
    rows = [metrics_row(s, {"reward": 0.5 * s, SENIOR_TOKEN_FRACTION: 0.4}, form) for s in (1, 2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_metrics(path) == [(1, {"reward": 0.5, SENIOR_TOKEN_FRACTION: 0.4}),
                                  (2, {"reward": 1.0, SENIOR_TOKEN_FRACTION: 0.4})]
    assert ("data" in rows[0]) == (form == "verl")


def test_names_older_logs_wrote_are_read_under_their_present_spelling():
    assert row_metrics({"step": 3, "senior_fraction": 0.5, "num_handoffs": 2.0}) == (
        3, {SENIOR_TOKEN_FRACTION: 0.5, MEAN_HANDOFFS: 2.0})
    release = {"step": 1, "data": {"actor/tandem_senior_token_frac": 0.48}}
    assert row_metrics(release) == (1, {"actor/tandem/senior_token_fraction": 0.48})


def test_a_bad_line_or_a_missing_file_is_one_error_naming_it(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 1, "a": 1}\n{"a": 2}\n')
    with pytest.raises(TandemError, match=r"m.jsonl:2: not a metrics row"):
        read_metrics(path)
    with pytest.raises(TandemError, match="no such metrics log"):
        read_metrics(tmp_path / "absent.jsonl")
    with pytest.raises(TandemError, match="unknown metrics row form 'csv'"):
        metrics_row(1, {}, "csv")


ROOT = Path(__file__).resolve().parents[1]
# The step names (the embedded trainer's, the transfer reward's, TRL's `step_time`); the ones that are also
# ordinary words or other settings' keys (`loss`, `lr`, `accuracy`, `entropy`, `clipfrac`, `elapsed_s`, TRL's
# `reward`) are left out of the scan.
STEP_NAMES = [metric_log.REWARD_MEAN, metric_log.REWARD_WITH_PARTNER_MEAN, metric_log.RESPONSE_LENGTH,
              metric_log.STOP_FRACTION, metric_log.ZERO_VARIANCE_GROUPS, metric_log.TERSE_FRACTION,
              metric_log.VAL_ACCURACY, metric_log.SFT_VAL_ACCURACY, metric_log.GRAD_NORM,
              metric_log.LOGPROB_ENGINE_DIFF_MAX, metric_log.JUNIOR_UPDATES, metric_log.TIME_ROLLOUT,
              metric_log.TIME_UPDATE, metric_log.TIME_STEP, metric_log.TIME_PARTNER, metric_log.PG_LOSS,
              metric_log.PG_CLIPFRAC, metric_log.PG_CLIPFRAC_LOWER, metric_log.PPO_KL, metric_log.KL_LOSS,
              metric_log.TRL_STEP_TIME, metric_log.TRANSFER_REWARD_MEAN, metric_log.TRANSFER_RECEIVER_ACCURACY,
              metric_log.TRANSFER_RECEIVER_TOKENS, metric_log.TRANSFER_RECEIVER_TOKENS_DECODED,
              metric_log.TRANSFER_RECEIVER_CALLS, metric_log.TRANSFER_CONTINUATIONS,
              metric_log.TRANSFER_CUT_FRACTION_ASKED, metric_log.TRANSFER_CUT_FRACTION_USED,
              metric_log.TRANSFER_MOVED_BACK_FRACTION, metric_log.TRANSFER_NO_ROOM_FRACTION,
              metric_log.TRANSFER_UNDETERMINED_FRACTION, metric_log.PARTNER_SCORE, metric_log.VERIFIER_SCORE,
              metric_log.JUNIOR_PREFIX, metric_log.GATED_JUNIOR_TOKENS, metric_log.SENIOR_ROLLOUT_DRIFT,
              metric_log.GRADER_CALLS, metric_log.TRL_TRANSFER_REWARD]
# Every folder of code but the tests; `scripts/` too, whose entries load the packages by path.
SCANNED = ("tandem", "tandem_app", "tandem_backends", "tandem_eval", "vllm_source", "verl", "hf_grpo", "scripts")


# The scale smoke's summary reads verl's log with the standard library alone (the GPU check loads it
# by path, beside no installed package), so it spells the names it reads; they are pinned below.
SMOKE_SUMMARY = "scripts/scale/smoke_summary.py"


def test_the_trainers_step_names_are_spelled_only_in_the_metric_log():
    quoted = re.compile(r"[\"']({})[\"']".format("|".join(map(re.escape, STEP_NAMES))))
    found = [f"{rel}:{i}: {m.group(1)}"
             for folder in SCANNED for path in sorted((ROOT / folder).rglob("*.py"))
             if (rel := path.relative_to(ROOT).as_posix()) not in ("tandem/io/metric_log.py", SMOKE_SUMMARY)
             for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             for m in quoted.finditer(line)]
    assert not found, "step names spelled outside tandem/io/metric_log.py:\n" + "\n".join(found)


def test_the_policy_loss_is_logged_under_its_constants():
    _, m = actor_loss(PolicyLossConfig(), torch.zeros(1, 3), torch.zeros(1, 3), torch.ones(1, 3), torch.ones(1, 3),
                      entropy=torch.zeros(1, 3))
    assert set(m) == {metric_log.PG_LOSS, metric_log.PG_CLIPFRAC, metric_log.PPO_KL, metric_log.PG_CLIPFRAC_LOWER,
                      metric_log.ENTROPY}
    assert metric_log.UPDATE_NAMES == {"pg_clipfrac": "clipfrac"}  # the embedded trainer's log spells it so


def test_the_scale_smoke_summary_reads_the_names_the_trainers_write():
    import importlib.util

    spec = importlib.util.spec_from_file_location("smoke_summary", ROOT / SMOKE_SUMMARY)
    summary = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summary)
    verl_tandem = "actor/" + TANDEM_PREFIX  # verl's workers' metrics carry actor/ in front
    assert summary.FRACTION == verl_tandem + SENIOR_TOKEN_FRACTION
    assert summary.GATED == verl_tandem + metric_log.GATED_JUNIOR_TOKENS
    assert summary.SENIOR_GAP == verl_tandem + metric_log.SENIOR_ROLLOUT_DRIFT
    assert summary.HEALTH == HEALTH_METRICS
    assert (summary.PARTNER, summary.VERIFIER, summary.JUNIOR, summary.TRANSFER) == (
        metric_log.PARTNER_SCORE, metric_log.VERIFIER_SCORE, metric_log.JUNIOR_PREFIX, metric_log.TRANSFER_PREFIX)
