"""Summarise a `scripts/scale_smoke.sh` run: DIR/summary.json and one printed line.

    python scripts/scale/smoke_summary.py --out DIR

Reads, per run (`tandem`, `tandem_split`, `vanilla`, `grpo_score`, `grpo_transfer`) under DIR/<run>/: verl's
file-logger metrics of the first launch (`metrics-1.jsonl`, steps 1-2) and of the resumed one (`metrics-2.jsonl`;
`grpo_score` and `grpo_transfer` have one launch and `resumed_step` None),
the tandem agent loop's trace (`trace.jsonl`), the launch times and the checkpoints.
Every number comes from those files; a run whose files are missing is an error.

Per run: `steps` (training steps of the first launch), `resumed_step` (the first step the
resumed launch logged), `senior_token_fraction` (mean over all steps of verl's
`actor/tandem/senior_token_fraction`; for the vanilla run, which has no junior and logs no
tandem metric, 1.0 — the summary records that no tandem metric was logged), its value per
step, `seconds_per_step` (mean `timing_s/step` over steps after the first of each launch,
whose time includes vLLM's warm-up), and the evidence the tests check: gated junior
tokens, gradient norms, rewards, validation accuracy, the trace's split into training and
(solo) validation responses, checkpoint steps and wall times; `placement` (`shared` or
`split` for tandem runs, `solo` for vanilla, from the launch's resolved Hydra config) with
the rollout's tensor-parallel size, `junior_model` and `junior_update` (tandem runs);
`checkpoint_dirs` (every entry of the checkpoint directory, debris included) and `kill`
(DIR/<run>/kill.json, for a first launch killed mid-step by scripts/scale/crash_launch.py); for a
junior that follows the senior, its per-step metrics (updated, checksum, largest distance to
the senior before and after the update), the checksum after the resumed launch re-applied the
checkpoint step's update, and the files under each checkpoint's `junior/`; and, for tandem runs,
the senior tokens' rollout-vs-trainer probability gap per step (`actor/tandem/senior_rollout_probs_diff_max`), which is
small after every weight sync only if the sync reached the engine's senior; and, read from
the rollout engine's own workers (`engines-N.jsonl`, which each vLLM worker writes when
`$TANDEM_ENGINE_REPORT` names it: `vllm_source/model_runner.py`), `vllm_version`, `model_runner`
(`v1` or `v2`), `model_runner_class`, `engine_workers` and `runner_env` (the values of
`VLLM_USE_V2_MODEL_RUNNER` the workers saw); with RLTR's transfer reward, its `transfer/*` metrics per
step and the step's generation time (the receiver's continuations are generated in it). A run whose workers disagree,
or that wrote no such record, is an error.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

RUNS = ("tandem", "tandem_split", "vanilla", "grpo_score", "grpo_transfer")  # the grpo_* runs: one launch, no resume
FRACTION = "actor/tandem/senior_token_fraction"
GATED = "actor/tandem/gated_junior_tokens"
SENIOR_GAP = "actor/tandem/senior_rollout_probs_diff_max"
JUNIOR = "junior/"  # the metrics of a junior that follows the senior (tandem.io.metric_log.JUNIOR_PREFIX)
JUNIOR_FOLDER = "junior"  # its checkpoint folder in a step folder: tandem.process.junior_update.CHECKPOINT_NAME
VERIFIER = "critic/verifier_score/mean"  # tandem.io.metric_log.VERIFIER_SCORE: the verifier alone, where the partner score is added
PARTNER = "partner_score"  # tandem.io.metric_log.PARTNER_SCORE; each term is partner_score/<term>
TRANSFER = "transfer/"  # tandem.io.metric_log.TRANSFER_PREFIX: RLTR's transfer reward's metrics
HEALTH = ("grader_timeouts", "grader_too_long", "grader_errors", "grader_unparsed", "grader_hedged")  # grader.HEALTH_METRICS


def read_metrics(path: Path) -> dict[int, dict]:
    """{step: metrics} from verl's FileLogger JSONL (one {"step", "data"} object per line)."""
    if not path.is_file():
        raise SystemExit(f"error: {path} is missing; did the launch run?")
    out: dict[int, dict] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            out.setdefault(int(row["step"]), {}).update(row["data"])
    return out


def per_step(steps: dict[int, dict], key: str) -> list[float | None]:
    return [steps[s].get(key) for s in sorted(steps)]


def trace_split(path: Path) -> dict:
    """Responses and senior-token share of training and of validation rollouts in the trace."""
    split = {"train": [0, 0, 0], "validation": [0, 0, 0]}  # responses, senior tokens, tokens
    if path.is_file():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            part = split["validation" if row["validate"] else "train"]
            part[0] += 1
            part[1] += row["senior_tokens"]
            part[2] += row["response_tokens"]
    return {name: {"responses": n, "senior_token_fraction": s / t if t else None} for name, (n, s, t) in split.items()}


def checkpoint_steps(ckpt: Path) -> list[int]:
    return sorted(int(p.name.split("_")[-1]) for p in ckpt.glob("*/global_step_*") if p.is_dir())


def placement(run_dir: Path) -> dict:
    """The placement and rollout TP size the first launch resolved (Hydra's saved config)."""
    import yaml

    path = run_dir / "hydra-1" / ".hydra" / "config.yaml"
    if not path.is_file():
        raise SystemExit(f"error: {path} is missing; did the launch run?")
    cfg = yaml.safe_load(path.read_text())
    tandem = cfg.get("tandem") or {}
    return {
        "placement": tandem.get("placement", "shared") if tandem.get("enable") else "solo",
        "rollout_tensor_parallel_size": cfg["actor_rollout_ref"]["rollout"]["tensor_model_parallel_size"],
        "junior_model": tandem.get("junior_model") if tandem.get("enable") else None,
        "junior_update": tandem.get("junior_update", "frozen") if tandem.get("enable") else None,
    }


def partner(run_dir: Path, steps: dict[int, dict]) -> dict:
    """The partner score's per-step metrics (tandem_verl.partner_score) and its trace file, where the score is on."""
    if not any(PARTNER in m for m in steps.values()):
        return {}
    terms = sorted({k for m in steps.values() for k in m if k.startswith(PARTNER + "/")})
    return {"partner_score_per_step": per_step(steps, PARTNER),
            "partner_terms_per_step": {t.split("/", 1)[1]: per_step(steps, t) for t in terms},
            "partner_seconds_per_step": per_step(steps, "timing_s/partner_score"),
            "partner_trace": str(run_dir / "partner.jsonl")}


def transfer(steps: dict[int, dict]) -> dict:
    """RLTR's transfer reward's per-step metrics (tandem_verl.transfer_reward), where it is on."""
    names = sorted({k for m in steps.values() for k in m if k.startswith(TRANSFER)})
    if not names:
        return {}
    # the samples the actor trained on: the batch's tokens over a sample's mean prompt + response (verl's own
    # metrics); receiver continuations in the batch would show as samples above the writer's responses
    def samples_of(m: dict) -> int | None:
        parts = [m.get(k) for k in ("perf/total_num_tokens", "prompt_length/mean", "response_length/mean")]
        return None if None in parts else round(parts[0] / (parts[1] + parts[2]))

    samples = [samples_of(m) for _, m in sorted(steps.items())]
    per_name = {k[len(TRANSFER):]: per_step(steps, k) for k in names}
    return {"transfer_per_step": per_name,
            "transfer_bonus_per_step": per_name.get("reward_mean"),  # R_transfer's mean (TRANSFER_REWARD_MEAN)
            "transfer_seconds_per_step": per_step(steps, "timing_s/" + TRANSFER.rstrip("/")),
            "generation_seconds_per_step": per_step(steps, "timing_s/gen"),
            "batch_samples_per_step": samples}


def junior_update_summary(run_dir: Path, steps: dict[int, dict], resumed: dict[int, dict]) -> dict:
    """What a junior that follows the senior logged (`tandem_verl.junior_driver`) and what its checkpoints hold."""
    first_resumed = resumed[min(resumed)]
    return {
        "junior_updated_per_step": per_step(steps, JUNIOR + "updated"),
        "junior_checksum_per_step": per_step(steps, JUNIOR + "checksum"),
        "junior_senior_max_abs_diff_before_per_step": per_step(steps, JUNIOR + "senior_max_abs_diff_before"),
        "junior_senior_max_abs_diff_per_step": per_step(steps, JUNIOR + "senior_max_abs_diff"),
        "junior_resumed_checksum": first_resumed.get(JUNIOR + "resumed_checksum"),
        "junior_checkpoint_files": {p.parent.name: sorted(f.name for f in p.iterdir())
                                    for p in sorted((run_dir / "ckpt").glob(f"*/global_step_*/{JUNIOR_FOLDER}"))},
    }


def engines(run_dir: Path, launches: int = 2) -> dict:
    """The vLLM version and model runner the rollout workers of each launch (1..launches) reported."""
    records = []
    for n in range(1, launches + 1):
        path = run_dir / f"engines-{n}.jsonl"
        if not path.is_file():
            raise SystemExit(f"error: {path} is missing; no vLLM worker reported its model runner (is "
                             "tandem-rlvr installed where the rollout servers run, and TANDEM_ENGINE_REPORT set?)")
        records += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    kinds = sorted({(r["vllm"], r["runner"], r["model_runner"]) for r in records})
    if len(kinds) != 1:
        raise SystemExit(f"error: {run_dir}: the rollout workers report {len(kinds)} vLLM model runners: {kinds}")
    vllm_version, runner, runner_class = kinds[0]
    return {"vllm_version": vllm_version, "model_runner": runner, "model_runner_class": runner_class,
            "engine_workers": len(records), "runner_env": sorted({str(r.get("runner_env")) for r in records})}


def summarize_run(run_dir: Path, tandem: bool) -> dict:
    first = read_metrics(run_dir / "metrics-1.jsonl")
    resumed = read_metrics(run_dir / "metrics-2.jsonl") if (run_dir / "metrics-2.jsonl").is_file() else {}
    steps = {**first, **resumed}
    fractions = per_step(steps, FRACTION)
    logged_tandem = sorted({k for m in steps.values() for k in m if "tandem" in k})
    if tandem:
        if None in fractions:
            raise SystemExit(f"error: {run_dir}: {FRACTION} missing at some step; the senior gate did not report")
        fraction = statistics.fmean(fractions)
    else:
        fraction = 1.0 if not logged_tandem else statistics.fmean(f for f in fractions if f is not None)
    timed = [first[s]["timing_s/step"] for s in sorted(first)[1:]] + [resumed[s]["timing_s/step"]
                                                                        for s in sorted(resumed)[1:]]
    val = {k: v for m in steps.values() for k, v in m.items() if k.startswith("val-core/") and "/mean@" in k}
    where = placement(run_dir)
    return {
        **where,
        **(junior_update_summary(run_dir, steps, resumed) if where["junior_update"] not in (None, "frozen") else {}),
        **engines(run_dir, 2 if resumed else 1),
        "steps": len(first),
        "resumed_step": min(resumed) if resumed else None,
        "total_steps": max(steps),
        "senior_token_fraction": fraction,
        "senior_token_fraction_per_step": fractions if tandem else None,
        "tandem_metrics_logged": logged_tandem,
        "gated_junior_tokens_per_step": per_step(steps, GATED) if tandem else None,
        "seconds_per_step": statistics.fmean(timed) if timed else None,
        "first_step_seconds": first[min(first)]["timing_s/step"],
        "launch_seconds": [int(p.read_text()) for p in sorted(run_dir.glob("launch-*.seconds"))],
        "reward_mean_per_step": per_step(steps, "critic/score/mean"),  # with the partner score where it is on
        "verifier_reward_mean_per_step": [m.get(VERIFIER, m.get("critic/score/mean")) for _, m in sorted(steps.items())],
        "grader_health_per_step": {name: per_step(steps, name) for name in HEALTH},  # tandem and partner trainers
        **partner(run_dir, steps),
        **transfer(steps),
        "grad_norm_per_step": per_step(steps, "actor/grad_norm"),
        "rollout_probs_diff_max_per_step": per_step(steps, "training/rollout_probs_diff_max"),
        "senior_rollout_probs_diff_max_per_step": per_step(steps, SENIOR_GAP) if tandem else None,
        "validation": val,
        "trace": trace_split(run_dir / "trace.jsonl") if tandem else None,
        "checkpoint_steps": checkpoint_steps(run_dir / "ckpt"),
        "checkpoint_dirs": sorted(p.name for p in (run_dir / "ckpt").glob("*/*")),
        "kill": json.loads((run_dir / "kill.json").read_text()) if (run_dir / "kill.json").is_file() else None,
    }


def summary_line(runs: dict[str, dict]) -> str:
    parts = []
    for name, r in runs.items():
        resumed = f" + step {r['resumed_step']} resumed" if r["resumed_step"] else ""
        parts.append(f"{name} ({r['placement']}, vLLM {r['vllm_version']} {r['model_runner']} runner): {r['steps']} "
                     f"steps{resumed}, senior token fraction {r['senior_token_fraction']:.3f}, "
                     f"{r['seconds_per_step']:.1f} s/step")
    return "scale smoke | " + " | ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="the directory scripts/scale_smoke.sh wrote")
    args = ap.parse_args(argv)
    runs = {name: summarize_run(args.out / name, tandem=name.startswith("tandem"))
            for name in RUNS if (args.out / name).is_dir()}
    if not runs:
        raise SystemExit(f"error: no run directories ({', '.join(RUNS)}) under {args.out}")
    (args.out / "summary.json").write_text(json.dumps({"runs": runs}, indent=2) + "\n")
    print(summary_line(runs), f"-> {args.out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
