"""The verl launchers on the GPUs: a tiny DeepScaleR slice from the hub, then per launcher 2 GRPO
steps on --model and a 3rd resumed from the step-2 checkpoint (scripts/scale/smoke_launch.sh),
judged from the run's files (scripts/scale/smoke_summary.py): the resume, both arms on the V1
runner, the senior token fraction, and what a variant's setting must show.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from .checkout import REPO, load_summary
from .report import Check, finish
from .command_runner import Runner

DATASET = "agentica-org/DeepScaleR-Preview-Dataset"
VARIANTS = {  # launch_tandem_<variant>: the tandem run with these overrides, in a launchers-<variant> folder
    "moving": ["tandem.junior_update=sync:1"],  # a copy: exact in bfloat16 (ema needs a float32 rollout)
    "score": ["partner_reward.weight=0.1"],
    "transfer": ["partner_reward.kind=transfer", "partner_reward.weight=0.5"],  # the junior continues each prefix
}

DATA = r"""
import json, sys
from datasets import load_dataset
out, n_train, n_val = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = load_dataset("%s", split="train").select(range(n_train + n_val))
for name, part in (("task_train", range(n_train)), ("task_test", range(n_train, n_train + n_val))):
    with open(f"{out}/{name}.jsonl", "w") as f:
        for i in part:
            f.write(json.dumps({"id": str(i), "problem": rows[i]["problem"], "answer": rows[i]["answer"]}) + "\n")
""" % DATASET


def data_check(python: str, out: Path, runner: Runner, env: dict, logs: Path, timeout: float) -> Check:
    """launchers_data: 64 training and 16 validation problems, then verl's parquet files of them."""
    data = out / "launchers"
    data.mkdir(parents=True, exist_ok=True)
    check, t0 = Check("launchers_data"), time.monotonic()
    rc = runner.run([python, "-c", DATA, str(data), "64", "16"], env, logs / "launchers_data.log", timeout)
    if rc == 0:
        rc = runner.run([python, "scripts/prepare_deepscaler.py", "--out", str(data / "data"), "--train",
                         str(data / "task_train.jsonl"), "--val", str(data / "task_test.jsonl"),
                         "--heldout", "0"], env,
                        logs / "launchers_data-parquet.log", timeout)
    return finish(check, t0, "passed" if rc == 0 else "failed",
                  f"{DATASET}: 64 training, 16 validation problems" + ("" if rc == 0 else f": exit {rc}"),
                  logs / "launchers_data.log")


def run_folder(name: str, out: Path) -> tuple[Path, str, str | None]:
    """(the launchers' folder, the run, its variant): a variant runs `tandem` in its own folder, on the same data."""
    run, variant, folder = name.removeprefix("launch_"), None, out / "launchers"
    if run.removeprefix("tandem_") in VARIANTS:
        variant, run = run.removeprefix("tandem_"), "tandem"
        folder = out / f"launchers-{variant}"
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / "data").exists():
            (folder / "data").symlink_to(out / "launchers" / "data")
    shutil.rmtree(folder / run, ignore_errors=True)
    (folder / run).mkdir(parents=True)
    return folder, run, variant


def judge(summary: dict, run: str, variant: str | None) -> tuple[bool, str]:
    """Whether the launcher pair did what it should, and the reason that says what it did."""
    ok = summary["steps"] == 2 and summary["resumed_step"] == 3 and 3 in summary["checkpoint_steps"]
    reason = f"2 steps + step {summary['resumed_step']} resumed; checkpoints {summary['checkpoint_steps']}"
    # read from the rollout workers (engines-N.jsonl); both arms must decode on V1
    ok = ok and summary["model_runner"] == "v1"
    reason += f"; vLLM {summary['vllm_version']}, {summary['model_runner']} model runner ({summary['model_runner_class']})"
    if run.startswith("tandem"):
        fraction = summary["senior_token_fraction"]
        ok = ok and 0.3 < fraction < 0.7
        reason += f"; senior token fraction {fraction:.3f} (0.3-0.7 expected)"
        gaps = summary.get("senior_rollout_probs_diff_max_per_step") or []
        if any(g is not None for g in gaps):  # reported, not judged: bf16 vLLM vs FSDP has no measured tolerance yet
            reason += "; senior-token rollout/trainer gap per step " + ", ".join(
                "n/a" if g is None else f"{g:.1e}" for g in gaps)
    if variant == "moving":
        sums = summary.get("junior_checksum_per_step") or []
        after = summary.get("junior_senior_max_abs_diff_per_step") or []
        ok = ok and summary.get("junior_updated_per_step") == [1, 1, 1] and len(set(sums)) == 3
        ok = ok and after == [0.0, 0.0, 0.0] and summary.get("junior_resumed_checksum") == sums[1]
        reason += f"; junior checksum per step {sums}, rebuilt at resume: {summary.get('junior_resumed_checksum')}"
    if variant == "score":
        scores = summary.get("partner_score_per_step") or []
        ok = ok and len(scores) == 3 and all(x is not None and abs(x) < float("inf") for x in scores)
        reason += f"; partner score per step {scores} ({summary.get('partner_seconds_per_step')} s)"
    if variant == "transfer":
        t = summary.get("transfer_per_step") or {}
        made = t.get("continuations") or []
        rows = zip(summary["reward_mean_per_step"], summary["verifier_reward_mean_per_step"],
                   summary.get("transfer_bonus_per_step") or [])
        paid = [None not in row and abs(row[0] - row[1] - 0.5 * row[2]) < 1e-3 for row in rows]
        ok = ok and len(made) == 3 and all(m and m > 0 for m in made) and len(paid) == 3 and all(paid)
        reason += (f"; junior-solo continuations per step {made}, receiver accuracy {t.get('receiver_acc')}, "
                   f"reward = verifier + 0.5 R_transfer each step: {all(paid) and len(paid) == 3}")
    return ok, reason


def launcher_check(name: str, python: str, args, n_gpus: int, runner: Runner, env: dict, logs: Path) -> Check:
    """Launch 1: 2 GRPO steps; launch 2: the 3rd, resumed from the step-2 checkpoint (scripts/scale/smoke_launch.sh)."""
    check, t0 = Check(name), time.monotonic()
    out, run, variant = run_folder(name, args.out)
    launch_env = {**env, "SMOKE_DEVICE": "gpu", "SMOKE_N_GPUS": str(n_gpus),
                  "PATH": f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"}
    for n, steps in ((1, 2), (2, 3)):
        log, s0 = out / run / f"launch-{n}.log", time.monotonic()
        cmd = ["bash", str(REPO / "scripts" / "scale" / "smoke_launch.sh"), str(out), args.model, run, str(n),
               str(steps), *VARIANTS.get(variant, [])]
        rc = runner.run(cmd, launch_env, log, args.timeout)
        (out / run / f"launch-{n}.seconds").write_text(str(int(time.monotonic() - s0)))
        if rc != 0:
            return finish(check, t0, "failed", f"launch {n} ({steps} steps) exited {rc}", log)
    try:
        summary = load_summary().summarize_run(out / run, tandem=run.startswith("tandem"))
    except SystemExit as e:  # smoke_summary reports missing files this way
        return finish(check, t0, "failed", str(e), out / run / "launch-2.log")
    ok, reason = judge(summary, run, variant)
    return finish(check, t0, "passed" if ok else "failed", reason, out / run / "launch-2.log", summary)
