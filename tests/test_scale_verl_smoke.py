"""Both DeepScaleR launchers, run for real on CPU at tiny scale (`scripts/scale_smoke.sh`).

The tandem launcher runs twice: `tandem` (placement shared, a rollout of two tensor-parallel
ranks each holding half of the senior and half of the self-paired junior: the first thing to
try on two GPUs; the junior follows the senior, `tandem.junior_update=ema:0.5`) and `tandem_split` (placement split: one rollout replica of two ranks, the
senior on rank 0 and a smaller junior of another shape, `tandem_app.zoo.SMALL_SHAPE`, on rank 1).
Both have two worker processes here. Then `grpo_score`: the GRPO launcher with the partner
score, scored by its base (RLT's setting), one launch of 2 steps; last `grpo_transfer`: the GRPO
launcher with RLTR's transfer reward, its base continuing each training response's prefix as a
junior-solo request in the rollout engine, one launch of 2 steps.

Runs in the scale lane and skips where vLLM is not installed. One module fixture runs
the smoke: each launcher for 2 GRPO steps with verl's real trainer, FSDP2 actor, vLLM
rollout server (the tandem engine for TRL), weight sync, reward function and
checkpoint, then a third step resumed from the checkpoint; the `tandem` run's first
launch is SIGKILLed mid-step 3 (crash safety, model_spec/SCALE.md). Each test reads one
behaviour off `summary.json` (built from verl's own metric logs, the agent-loop trace
and the checkpoint directories).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytest.importorskip("verl", reason="verl is not installed")
pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke(scale_senior, scale_small_junior, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("scale-smoke")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(["bash", str(REPO / "scripts" / "scale_smoke.sh"), "--out", str(out),
                           "--base", str(scale_senior.parent), "--split-junior", str(scale_small_junior)],
                          env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "scale smoke |" in proc.stdout
    return json.loads((out / "summary.json").read_text())["runs"]


TANDEM_RUNS = ["tandem", "tandem_split"]
RESPONSES_PER_STEP = 8 * 4  # prompts x responses (scripts/scale/smoke_launch.sh)
ACTOR_FILES = [f"{kind}_world_size_2_rank_{rank}.pt" for kind in ("model", "optim", "extra_state") for rank in (0, 1)]


def whole(path: str | None) -> bool:
    """A checkpoint verl can resume: data.pt (written last) and the actor's files."""
    return path is not None and (Path(path) / "data.pt").is_file() and all(
        (Path(path) / "actor" / name).is_file() for name in ACTOR_FILES)
RUNS = [*TANDEM_RUNS, "vanilla"]
SYNC_TOL = 1e-3  # max |p_rollout - p_trainer| after a weight sync (float32 on CPU: ~1e-6 measured)


@pytest.mark.parametrize("run", RUNS)
def test_each_launcher_trains_two_steps_and_resumes_a_third_from_its_checkpoint(smoke, run):
    r = smoke[run]
    assert r["steps"] == 2 and r["resumed_step"] == 3 and r["total_steps"] == 3
    assert r["checkpoint_steps"] == [2, 3]


@pytest.mark.parametrize(("run", "placement", "tp"), [("tandem", "shared", 2), ("tandem_split", "split", 2),
                                                   ("vanilla", "solo", 1)])
def test_the_summary_reports_each_runs_placement(smoke, run, placement, tp):
    assert smoke[run]["placement"] == placement and smoke[run]["rollout_tensor_parallel_size"] == tp
    assert smoke[run]["engine_workers"] == 2 * tp  # one report per vLLM worker, from each of the two launches


def test_the_shared_runs_junior_follows_the_senior_by_ema_after_every_step_and_resumes_bit_exact(smoke):
    """ema:0.5 in the rollout engines after each sync (each TP rank on its shard) halves the junior's distance to the
    senior; each checkpoint holds both ranks' junior, and the resumed launch rebuilds step 2's junior bit for bit."""
    r = smoke["tandem"]
    assert r["junior_update"] == "ema:0.5" and r["junior_updated_per_step"] == [1, 1, 1]
    before, after = r["junior_senior_max_abs_diff_before_per_step"], r["junior_senior_max_abs_diff_per_step"]
    assert all(b > 0 for b in before)  # each step's update moved the senior away from the junior
    assert all(a == pytest.approx(0.5 * b, abs=1e-6) for a, b in zip(after, before))  # float32 rounding of the blend
    sums = r["junior_checksum_per_step"]
    assert len(set(sums)) == 3  # the junior moved every step
    assert r["junior_resumed_checksum"] == sums[1]  # step 2's junior, from checkpoint 2 (through step 1) + step 2's update
    both_ranks = ["rank_0.pt", "rank_1.pt"]
    assert r["junior_checkpoint_files"] == {"global_step_2": both_ranks, "global_step_3": both_ranks}


def test_the_split_run_adds_its_smaller_juniors_partner_score_to_every_reward(smoke):
    """partner_reward.weight=0.1: verl's reference worker holds the smaller junior and scores each response."""
    r = smoke["tandem_split"]
    scores, terms = r["partner_score_per_step"], r["partner_terms_per_step"]
    assert len(scores) == 3 and all(math.isfinite(x) for x in scores)
    assert set(terms) == {"logprob_mean", "logprob_min", "kl_mean", "kl_max"}
    assert all(x < 0 for x in terms["logprob_mean"])  # a log-prob
    for combined, verifier, score in zip(r["reward_mean_per_step"], r["verifier_reward_mean_per_step"], scores):
        assert combined == pytest.approx(verifier + 0.1 * score, abs=1e-4)  # no padding rows at 32 per step
    assert smoke["tandem"].get("partner_score_per_step") is None  # off by default


@pytest.mark.parametrize(("run", "scorer", "steps"), [("tandem_split", "scale_small_junior", 3),
                                                   ("grpo_score", "scale_senior", 2)])
def test_the_logged_partner_terms_equal_the_core_function_on_the_same_tokens_offline(smoke, run, scorer, steps,
                                                                                      request):
    """Each scored response's terms (trace) against `tandem.rewards.partner_score` on the scorer's log-probs recomputed
    with Hugging Face (the split run's smaller junior; the GRPO run's base): the target built as the core builds
    it, the same log-probs and terms to 1e-4."""
    from tandem.models.loading import load_model, load_tokenizer
    from tandem.rewards.partner_score import partner_score, partner_terms, target_sequences
    from tandem.rewards.partner_score import scored_logprobs
    from tandem.loss.logprobs import pad_right

    scorer_dir = request.getfixturevalue(scorer)  # the scorer's model directory
    rows = [json.loads(x) for x in Path(smoke[run]["partner_trace"]).read_text().splitlines()]
    assert len(rows) == steps * RESPONSES_PER_STEP and {r["step"] for r in rows} == set(range(1, steps + 1))
    tokenizer, junior = load_tokenizer(scorer_dir), load_model(scorer_dir, "float32", "cpu")
    for r in rows:
        assert target_sequences(tokenizer, r["prompt_ids"], r["response_ids"], r["gold"], r["target"]) == (
            r["context_ids"], r["target_ids"])
    pad, temperature = tokenizer.pad_token_id, rows[0]["temperature"]
    target_lp, target_mask = scored_logprobs(junior, [r["context_ids"] for r in rows], [r["target_ids"] for r in rows],
                                             pad, temperature)
    junior_lp, response_mask = scored_logprobs(junior, [r["prompt_ids"] for r in rows],
                                               [r["response_ids"] for r in rows], pad, temperature)
    width = junior_lp.shape[1]
    logged_junior = pad_right([r["junior_logprobs"] for r in rows], 0.0, torch.float64, length=width)
    logged_target = pad_right([r["target_logprobs"] for r in rows], 0.0, torch.float64, length=target_lp.shape[1])
    assert float(((logged_junior - junior_lp) * response_mask).abs().max()) < 1e-4  # verl's reference pass: the junior
    assert float(((logged_target - target_lp) * target_mask).abs().max()) < 1e-4
    senior = pad_right([r["senior_logprobs"] for r in rows], 0.0, torch.float64, length=width)
    wrote = pad_right([r["authorship_mask"] for r in rows], 0, length=width).double()
    terms = partner_terms(target_lp, target_mask, senior, junior_lp, wrote)
    for name, values in terms.items():
        assert max(abs(float(v) - r["terms"][name]) for v, r in zip(values, rows)) < 1e-4, name
    score = partner_score(terms, {"logprob_mean": 1.0, "logprob_min": 0.01, "kl_mean": 3.0, "kl_max": 0.03})
    assert max(abs(float(v) - r["score"]) for v, r in zip(score, rows)) < 1e-4


def test_the_grpo_launcher_is_scored_by_its_base_every_step(smoke):
    """RLT's setting on verl: the GRPO launcher with partner_reward.weight=0.1 (verl's sync trainer plus the
    score; the reference worker is the base). At step 1 the senior is the base, so the KL terms are 0."""
    r = smoke["grpo_score"]
    assert r["placement"] == "solo" and r["tandem_metrics_logged"] == [] and r["steps"] == 2
    scores, terms = r["partner_score_per_step"], r["partner_terms_per_step"]
    assert len(scores) == 2 and all(math.isfinite(x) for x in scores)
    assert terms["kl_mean"][0] == terms["kl_max"][0] == 0.0 and terms["kl_max"][1] > 0
    for combined, verifier, score in zip(r["reward_mean_per_step"], r["verifier_reward_mean_per_step"], scores):
        assert combined == pytest.approx(verifier + 0.1 * score, abs=1e-4)
    rows = [json.loads(x) for x in Path(r["partner_trace"]).read_text().splitlines()]
    assert all(set(row["authorship_mask"]) == {1} for row in rows)  # a solo response: every token the senior's


TRANSFER_WEIGHT = 0.5  # scripts/scale_smoke.sh's SMOKE_TRANSFER_WEIGHT default


def test_the_grpo_launcher_with_the_transfer_reward_has_its_base_continue_every_prefix_every_step(smoke):
    """RLTR on verl: each training response is cut at RLTR's drawn fraction (moved back before the answer), the
    base continues every usable prefix in the rollout engine, and reward = verifier + 0.5 * R_transfer reaches
    verl's advantages. The receivers' tokens stay out of the batch: each step trains on its 32 writer responses."""
    r = smoke["grpo_transfer"]
    assert r["placement"] == "solo" and r["tandem_metrics_logged"] == [] and r["steps"] == 2
    t = r["transfer_per_step"]
    for step in range(2):
        missing = t["no_room_frac"][step] + t["undetermined_frac"][step]
        assert t["continuations"][step] == round(RESPONSES_PER_STEP * (1 - missing)) > 0  # one draw, one sample
        assert t["receiver_calls"][step] == t["continuations"][step]  # one request per continuation on verl
        assert t["receiver_tokens"][step] >= t["continuations"][step]
        assert 0 < t["cut_fraction_asked"][step] < 1 and 0 <= t["cut_fraction_used"][step] < 1
        assert 0 <= t["receiver_acc"][step] <= 1 and 0 <= t["reward_mean"][step] <= 1
    for combined, verifier, bonus in zip(r["reward_mean_per_step"], r["verifier_reward_mean_per_step"],
                                         t["reward_mean"]):
        assert combined == pytest.approx(verifier + TRANSFER_WEIGHT * bonus, abs=1e-4)
    assert max(t["receiver_acc"]) > 0, "the base must solve some prefixes for the reward to mean anything"
    assert r["batch_samples_per_step"] == [RESPONSES_PER_STEP] * 2


def test_the_split_run_pairs_the_senior_with_a_smaller_junior(smoke, scale_senior, scale_small_junior):
    """tandem.junior_model of another shape: fewer layers, query heads and KV heads, one vocabulary."""
    senior = json.loads((scale_senior / "config.json").read_text())
    junior = json.loads((Path(smoke["tandem_split"]["junior_model"]) / "config.json").read_text())
    assert Path(smoke["tandem_split"]["junior_model"]) == scale_small_junior
    assert Path(smoke["tandem"]["junior_model"]) == scale_senior  # the shared run stays self-paired
    for key in ("num_hidden_layers", "num_attention_heads", "num_key_value_heads"):
        assert junior[key] < senior[key], key
    assert junior["vocab_size"] == senior["vocab_size"]


@pytest.mark.parametrize("run", TANDEM_RUNS)
def test_tandem_run_logs_a_senior_token_fraction_near_one_half_every_step(smoke, run):
    r = smoke[run]
    assert len(r["senior_token_fraction_per_step"]) == 3 and None not in r["senior_token_fraction_per_step"]
    assert abs(r["senior_token_fraction"] - 0.5) <= 0.1


@pytest.mark.parametrize("run", TANDEM_RUNS)
def test_tandem_senior_gate_gives_junior_tokens_weight_zero_every_step(smoke, run):
    assert all(n > 0 for n in smoke[run]["gated_junior_tokens_per_step"])


@pytest.mark.parametrize("run", TANDEM_RUNS)
def test_tandem_validation_is_solo_and_training_is_co_written(smoke, run):
    trace = smoke[run]["trace"]
    assert trace["validation"]["responses"] > 0 and trace["validation"]["senior_token_fraction"] == 1.0
    killed = smoke[run]["kill"]["train_lines"] - 2 * RESPONSES_PER_STEP if smoke[run]["kill"] else 0
    assert trace["train"]["responses"] == 3 * RESPONSES_PER_STEP + killed  # + the killed launch's step-3 rollouts
    assert 0.3 < trace["train"]["senior_token_fraction"] < 0.7


# Crash safety: the `tandem` run's first launch saves after every step and gets SIGKILL (the whole
# tree: driver, Ray, FSDP workers, vLLM servers) once checkpoint 2 is tracked and step 3's rollouts
# have started (scripts/scale/crash_launch.py); its relaunch, the same command, resumes.

def test_the_kill_landed_mid_step_three_after_the_second_checkpoint(smoke):
    kill = smoke["tandem"]["kill"]
    assert kill["tracker"] == "2" and kill["steps_logged"] == [1, 2]
    assert 2 * RESPONSES_PER_STEP < kill["train_lines"] <= 3 * RESPONSES_PER_STEP


def test_what_resume_auto_would_pick_after_the_kill_is_a_whole_checkpoint(smoke):
    latest = smoke["tandem"]["kill"]["latest"]
    assert latest.endswith("global_step_2") and whole(latest)


def test_retention_keeps_one_checkpoint_per_launch_and_leaves_no_debris(smoke):
    """max_actor_ckpt_to_keep=1 counts the saves of one process, as in verl: the killed launch removed step 1,
    the relaunch kept step 2 (not its own) beside its step 3."""
    assert smoke["tandem"]["kill"]["dirs"] == ["global_step_2", "latest_checkpointed_iteration.txt"]
    assert smoke["tandem"]["checkpoint_dirs"] == ["global_step_2", "global_step_3", "latest_checkpointed_iteration.txt"]


@pytest.mark.parametrize("run", [*TANDEM_RUNS, "grpo_score", "grpo_transfer"])
def test_the_tandem_and_partner_trainers_log_the_rewards_health_every_step(smoke, run):
    health = smoke[run]["grader_health_per_step"]
    assert set(health) == {"grader_timeouts", "grader_too_long", "grader_errors", "grader_unparsed", "grader_hedged"}
    for name, values in health.items():
        assert len(values) == smoke[run]["total_steps"] and None not in values and min(values) >= 0, name


def test_vanilla_run_is_all_senior_and_logs_no_tandem_metric(smoke):
    r = smoke["vanilla"]
    assert r["senior_token_fraction"] == 1.0 and r["tandem_metrics_logged"] == []


@pytest.mark.parametrize("run", RUNS)
def test_the_tiny_senior_earns_reward_so_gradients_flow(smoke, run):
    r = smoke[run]
    assert 0 < max(r["verifier_reward_mean_per_step"]) and min(r["verifier_reward_mean_per_step"]) < 1
    assert any(g > 0 for g in r["grad_norm_per_step"])


def test_vanilla_rollouts_use_the_synced_weights(smoke):
    """After an update, vLLM's probabilities match the trainer's: the weight sync reached the engine."""
    diffs = smoke["vanilla"]["rollout_probs_diff_max_per_step"]
    assert all(d is not None and d < SYNC_TOL for d in diffs[1:])


@pytest.mark.parametrize("run", TANDEM_RUNS)
def test_tandem_weight_syncs_reach_the_engines_senior(smoke, run):
    """On senior-written tokens vLLM's probabilities match the trainer's after every sync (junior tokens
    carry the junior's, so verl's all-token diff cannot show it); with split, the senior is on rank 0.
    The junior's weights are checked by the engine at each sync (`JuniorGuard`): a change stops the run."""
    gaps = smoke[run]["senior_rollout_probs_diff_max_per_step"]
    assert len(gaps) == 3 and all(g is not None and g < SYNC_TOL for g in gaps)
    assert max(smoke[run]["rollout_probs_diff_max_per_step"][1:]) > 10 * SYNC_TOL  # junior tokens: the junior's


@pytest.mark.parametrize("run", RUNS)
def test_validation_ran_and_scored(smoke, run):
    val = smoke[run]["validation"]
    assert val and all(0 <= v <= 1 for v in val.values())


def test_both_arms_report_one_vllm_and_the_same_v1_model_runner_read_from_their_workers(smoke):
    """Each run's rollout workers wrote the runner class they hold (engines-N.jsonl); GRPO and TRL agree."""
    import vllm

    kinds = {run: (smoke[run]["vllm_version"], smoke[run]["model_runner"], smoke[run]["model_runner_class"])
             for run in RUNS}
    assert len(set(kinds.values())) == 1, kinds
    assert smoke["vanilla"]["model_runner"] == "v1" and vllm.__version__.startswith(smoke["vanilla"]["vllm_version"])
    assert all(smoke[run]["runner_env"] == ["0"] for run in RUNS)  # the launchers' pin reached every worker
