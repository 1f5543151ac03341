"""Benchmark: what the partner score (`tandem.rewards.partner_score`) costs per training step, per trainer.

The embedded trainer (`tandem_app.train.grpo_trainer`) and HF TRL's `GRPOTrainer` with the
project's rollout function (`hf_trl`) run the same TRL setting side by side in one process: a
senior (the zoo's tiny model, or `--model`), its own initial weights as the frozen junior
that scores it, PROMPTS prompts x G responses of up to MAX_NEW tokens per step,
`partner_reward.weight=0.1` with `--target`. Each trainer logs the seconds the score took
(`time_partner`) beside its whole step (`time_step` on the embedded trainer, TRL's
`step_time`); the first step (warm-up) is left out. One JSON record per trainer with the mean
seconds per step of the score and of the step, and the score's share.

    .venv/bin/python scripts/bench_partner_score.py --out bench_partner_score.json
    .venv/bin/python scripts/bench_partner_score.py --model runs/demo/seed-0/sft/model --steps 6 --out FILE.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
from pathlib import Path

PROMPTS, G, MAX_NEW = 4, 8, 48
WEIGHT = 0.1


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path, help="JSON output path")
    p.add_argument("--model", type=Path, default=None, help="the senior (an HF model directory); default: a zoo tiny model")
    p.add_argument("--steps", type=int, default=4, help="training steps per trainer, the first left out (default 4)")
    p.add_argument("--target", choices=("answer", "solution"), default="solution",
                   help="what the junior is scored on after the response (default: solution, as in the demo)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    args = p.parse_args()
    if args.steps < 2:
        p.error("--steps must be at least 2: the first step is warm-up and left out")
    return args


def record(trainer: str, score_s: list[float], step_s: list[float]) -> dict:
    score, step = statistics.fmean(score_s), statistics.fmean(step_s)
    return {"trainer": trainer, "steps_timed": len(step_s), "partner_seconds_per_step": round(score, 4),
            "step_seconds": round(step, 4), "partner_share_of_step": round(score / step, 4)}


def embedded(model: Path, out: Path, args) -> dict:
    from tandem.io.metric_log import TIME_PARTNER, TIME_ROLLOUT, TIME_STEP, TIME_UPDATE
    from tandem.rewards.partner_config import PartnerRewardConfig
    from tandem.rollout.sampling import SamplingConfig
    from tandem_app.train.grpo_trainer import GRPOTrainer
    from tandem_app.train.train_config import TrainConfig

    cfg = TrainConfig(method="tandem", model=str(model), out=str(out), steps=args.steps, prompts_per_step=PROMPTS,
                      group_size=G, sampling=SamplingConfig(max_new_tokens=MAX_NEW), val_every=0,
                      save_every=args.steps, partner_reward=PartnerRewardConfig(weight=WEIGHT, target=args.target))
    GRPOTrainer(cfg, progress=False).train()
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if TIME_PARTNER in r][1:]
    out = record("embedded", [r[TIME_PARTNER] for r in rows], [r[TIME_STEP] for r in rows])
    out["rollout_seconds"] = round(statistics.fmean(r[TIME_ROLLOUT] for r in rows), 4)  # includes the score
    out["update_seconds"] = round(statistics.fmean(r[TIME_UPDATE] for r in rows), 4)
    return out


def hf_trl(model: Path, out: Path, args) -> dict:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from hf_grpo.tandem_rollout import tandem_rollout_func
    from tandem.io.metric_log import TIME_PARTNER, TRL_STEP_TIME
    from tandem.models.loading import load_model, load_tokenizer
    from tandem.rewards.partner_config import PartnerRewardConfig
    from tandem_app.task import generate_problems

    rollout = tandem_rollout_func(partner_reward=PartnerRewardConfig(weight=WEIGHT, target=args.target))
    rows = [{"prompt": [{"role": "user", "content": p.prompt}], "answer": p.answer, "solution": p.solution}
            for p in generate_problems("train", PROMPTS * args.steps, 0)]
    senior = load_model(model)
    senior.requires_grad_(True)
    config = GRPOConfig(output_dir=str(out), per_device_train_batch_size=PROMPTS * G, num_generations=G,
                        max_completion_length=MAX_NEW, report_to=[], use_cpu=True, save_strategy="no", seed=0,
                        bf16=False, max_steps=args.steps, logging_steps=1, disable_tqdm=True)

    def verifier(completions, **kwargs):  # timing only: the verifier's cost is not what is measured
        return [0.0] * len(completions)

    trainer = GRPOTrainer(model=senior, reward_funcs=[verifier, rollout.partner_reward_func()], args=config,
                          train_dataset=Dataset.from_list(rows), processing_class=load_tokenizer(model),
                          rollout_func=rollout)
    trainer.train()
    logged = [h for h in trainer.state.log_history if TIME_PARTNER in h][1:]
    return record("hf_trl", [h[TIME_PARTNER] for h in logged], [h[TRL_STEP_TIME] for h in logged])


def main() -> None:
    args = parse_args()
    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            from tandem_app.zoo import build_tiny

            model = build_tiny(Path(tmp) / "senior", seed=0)
        runs = [embedded(model, Path(tmp) / "embedded", args), hf_trl(model, Path(tmp) / "hf_trl", args)]
    result = {"machine": {"cpus": os.cpu_count(), "torch_threads": args.threads, "platform": platform.platform()},
              "setting": {"model": str(args.model or "zoo tiny (untrained)"), "prompts": PROMPTS, "responses": G,
                          "max_new_tokens": MAX_NEW, "target": args.target, "weight": WEIGHT, "steps": args.steps},
              "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for r in runs:
        print(f"{r['trainer']:>8}: partner score {r['partner_seconds_per_step']:.3f} s of a "
              f"{r['step_seconds']:.3f} s step ({100 * r['partner_share_of_step']:.1f}%)")


if __name__ == "__main__":
    main()
