"""Time per training step of `trl` vs `grpo` on the same budget, side by side in one run.

Both trainers start from the same model with identical hyper-parameters; steps are
interleaved (trl, grpo, trl, grpo, ...) so background load hits both alike, after one
warm-up step each. With a random-init model (the default: a fresh tiny model) no
response stops early, so both methods generate exactly `max_new_tokens` tokens per
response and the comparison is at equal token counts.

    python scripts/bench_train.py --out bench_train.json [--model DIR] [--steps 6]

Output JSON: per method the median/mean seconds per step (and their rollout/update
split, and process CPU seconds), plus `ratio_trl_over_grpo` = median trl step / median
grpo step (wall clock) and `ratio_cpu_trl_over_grpo` (CPU time, steadier under load).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--model", help="HF model dir to start from (default: a fresh tiny random model)")
    p.add_argument("--steps", type=int, default=6, help="timed steps per method (default 6)")
    p.add_argument(
        "--prompts-per-step", type=int, default=32,
        help="default 32 (with group size 4 and 96 tokens: the demo recipe of 2026-11-22, kept for comparable timings)",
    )
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--ppo-mini-batches", type=int, default=2)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--engine-mode", default="auto", help="engine decoding mode for trl (auto|paired|lockstep|lazy)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    p.add_argument("--device", default="cpu")
    return p.parse_args(argv)


def summarize(rows: list[dict]) -> dict:
    from tandem.io.metric_log import RESPONSE_LENGTH, SENIOR_TOKEN_FRACTION, TIME_ROLLOUT, TIME_STEP, TIME_UPDATE

    out = {"steps": len(rows)}
    for key in (TIME_STEP, TIME_ROLLOUT, TIME_UPDATE, "cpu_step"):
        values = [r[key] for r in rows]
        out[f"{key}_median_s"] = statistics.median(values)
        out[f"{key}_mean_s"] = statistics.fmean(values)
    out["response_len_mean"] = statistics.fmean(r[RESPONSE_LENGTH] for r in rows)
    out[f"{SENIOR_TOKEN_FRACTION}_mean"] = statistics.fmean(r[SENIOR_TOKEN_FRACTION] for r in rows)
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    from tandem.io.jsonl import write_json
    from tandem.io.metric_log import TIME_ROLLOUT, TIME_STEP, TIME_UPDATE
    from tandem.rollout.sampling import SamplingConfig
    from tandem_app.train.grpo_trainer import GRPOTrainer
    from tandem_app.train.train_config import TrainConfig
    from tandem_app.zoo import build_tiny

    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or str(build_tiny(Path(tmp) / "tiny", seed=0))
        trainers = {}
        for method in ("trl", "grpo"):
            cfg = TrainConfig(
                method=method,
                model=model,
                out=str(Path(tmp) / method),
                steps=args.steps + 1,
                prompts_per_step=args.prompts_per_step,
                group_size=args.group_size,
                ppo_mini_batches=args.ppo_mini_batches,
                sampling=SamplingConfig(max_new_tokens=args.max_new_tokens),
                engine_mode=args.engine_mode,
                threads=args.threads,
                device=args.device,
            )
            trainers[method] = GRPOTrainer(cfg, progress=False)
        timed = {"trl": [], "grpo": []}
        for step in range(args.steps + 1):  # step 0 warms up
            for method, trainer in trainers.items():
                cpu0 = time.process_time()
                m = trainer.step(step)
                m["cpu_step"] = time.process_time() - cpu0
                print(
                    f"{method} step {step}: {m[TIME_STEP]:.3f}s (rollout {m[TIME_ROLLOUT]:.3f}, "
                    f"update {m[TIME_UPDATE]:.3f})",
                    file=sys.stderr,
                )
                if step:
                    timed[method].append(m)
    result = {method: summarize(rows) for method, rows in timed.items()}
    result["ratio_trl_over_grpo"] = result["trl"]["time_step_median_s"] / result["grpo"]["time_step_median_s"]
    # Process CPU seconds per step: steadier than wall-clock on a shared machine.
    result["ratio_cpu_trl_over_grpo"] = result["trl"]["cpu_step_median_s"] / result["grpo"]["cpu_step_median_s"]
    result["ratio_rollout_trl_over_grpo"] = (
        result["trl"]["time_rollout_median_s"] / result["grpo"]["time_rollout_median_s"]
    )
    result["setup"] = {
        "model": args.model or "tiny random (tandem_app.zoo.build_tiny, seed 0)",
        "prompts_per_step": args.prompts_per_step,
        "group_size": args.group_size,
        "ppo_mini_batches": args.ppo_mini_batches,
        "max_new_tokens": args.max_new_tokens,
        "engine_mode": args.engine_mode,
        "device": args.device,
        "threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    write_json(args.out, result)
    print(f"ratio_trl_over_grpo = {result['ratio_trl_over_grpo']:.3f} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
