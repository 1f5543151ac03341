"""What RLTR's transfer reward costs per step: GRPO against GRPO + transfer, steps interleaved.

Both embedded trainers start from the same base with the quick demo's RL recipe
(`tandem_app.experiments.demo.demo_config(quick=True)`: 8 prompts x 8 responses, an
82-token budget); the second adds `partner_reward.kind=transfer` with `transfer.samples=1`
and the project's variant of RLTR's rules the recorded figures were measured with (one uniform
fraction per response moved back before the answer, undetermined golds skipped, the receiver
writing the rest of the budget: `TransferConfig(**PROJECT_VARIANT)`), the receiver being the base
(a GRPO run's). A third arm, `grpo_transfer_per_budget`, is the same transfer with
the receiver called once per distinct remaining budget, as before the one batched call
(`tandem.rewards.transfer_reward.shared_calls` swapped for `per_budget_calls` during its steps only:
with a call at each row's own cap, `within_cap` cuts nothing, so this is the old grouping).
Steps alternate (grpo, transfer, per-budget transfer, grpo, ...) after one warm-up step each,
so background load hits every arm alike. A base that writes real solutions matters here:
its responses stop, and the leak rule moves its cuts back, as in a run; so by default the
script first builds the quick demo's base (its tiny model and SFT, about a minute on 2 cores),
or takes one given with `--base` (a quick demo's `OUT/sft/model`).

    python scripts/bench_transfer.py --out bench_transfer.json [--base DIR] [--steps 5]

Output JSON: per arm the median/mean seconds per step (rollout, of it the transfer's
`time_partner`, update) and process CPU seconds; the writer's tokens per step and, for the
transfer, the receiver's tokens kept (`transfer/receiver_tokens`) and decoded (the shared cap's
price: `transfer/receiver_tokens_decoded`) per step; `ratio_step_transfer_over_grpo` (wall
clock, medians) and `ratio_cpu_transfer_over_grpo` (CPU time, steadier under load), and the
per-budget arm's step and transfer time over the batched one's.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from tandem.io.metric_log import (
    ACCURACY,
    RESPONSE_LENGTH,
    STOP_FRACTION,
    TIME_PARTNER,
    TIME_ROLLOUT,
    TIME_STEP,
    TIME_UPDATE,
    TRANSFER_CONTINUATIONS,
    TRANSFER_CUT_FRACTION_ASKED,
    TRANSFER_CUT_FRACTION_USED,
    TRANSFER_MOVED_BACK_FRACTION,
    TRANSFER_NO_ROOM_FRACTION,
    TRANSFER_RECEIVER_ACCURACY,
    TRANSFER_RECEIVER_CALLS,
    TRANSFER_RECEIVER_TOKENS,
    TRANSFER_RECEIVER_TOKENS_DECODED,
    TRANSFER_UNDETERMINED_FRACTION,
)

TIMES = (TIME_STEP, TIME_ROLLOUT, TIME_PARTNER, TIME_UPDATE, "cpu_step")
COUNTS = ("writer_tokens", TRANSFER_RECEIVER_TOKENS, TRANSFER_RECEIVER_TOKENS_DECODED, TRANSFER_RECEIVER_CALLS,
          TRANSFER_CONTINUATIONS, TRANSFER_CUT_FRACTION_ASKED, TRANSFER_CUT_FRACTION_USED,
          TRANSFER_MOVED_BACK_FRACTION, TRANSFER_NO_ROOM_FRACTION, TRANSFER_UNDETERMINED_FRACTION,
          TRANSFER_RECEIVER_ACCURACY, ACCURACY, STOP_FRACTION)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--base", help="an SFT'd base to start from (default: build the quick demo's base first)")
    p.add_argument("--steps", type=int, default=12, help="timed steps per arm, after one warm-up (default 12)")
    p.add_argument("--weight", type=float, default=1.0, help="partner_reward.weight (does not change the cost)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1: a shared 2-core machine)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def build_base(out: Path, seed: int, threads: int) -> Path:
    """The quick demo's base: its tiny model, SFT'd with its recipe (`tandem-rlvr demo --quick`'s first phases)."""
    from tandem_app.experiments.demo import demo_config, sft_config
    from tandem_app.train.sft import run_sft
    from tandem_app.zoo import build_tiny

    cfg = demo_config(quick=True, seed=seed, threads=threads)
    build_tiny(out / "tiny", seed=seed, cfg=cfg.model)
    run_sft(sft_config(cfg, out), progress=False)
    return out / "sft" / "model"


def per_budget_calls(caps: list[int], context_lengths: list[int], limit) -> list[tuple[int, list[int]]]:
    """One receiver call per distinct remaining budget: the grouping before the batched call."""
    return [(cap, [k for k, c in enumerate(caps) if c == cap]) for cap in sorted(set(caps))]


def summarize(rows: list[dict]) -> dict:
    out = {"steps": len(rows)}
    for key in TIMES + COUNTS:
        values = [r[key] for r in rows if key in r]
        if values:
            out[f"{key}_median"] = statistics.median(values)
            out[f"{key}_mean"] = statistics.fmean(values)
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    import tandem.rewards.transfer_reward as transfer_reward
    from tandem.io.jsonl import write_json
    from tandem.rewards.partner_config import PartnerRewardConfig
    from tandem.rewards.transfer_config import PROJECT_VARIANT, TransferConfig
    from tandem_app.experiments.demo import demo_config, train_config
    from tandem_app.train.grpo_trainer import GRPOTrainer

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.time()
        base = Path(args.base) if args.base else build_base(Path(tmp) / "demo", args.seed, args.threads)
        build_s = time.time() - t0 if not args.base else 0.0
        demo = demo_config(quick=True, seed=args.seed, threads=args.threads)
        plain = replace(train_config(demo, Path(tmp), "grpo"), model=str(base), steps=args.steps + 1, val_every=0,
                        save_every=10**9)
        partner = PartnerRewardConfig(kind="transfer", weight=args.weight, transfer=TransferConfig(samples=1, **PROJECT_VARIANT))
        configs = {"grpo": replace(plain, out=str(Path(tmp) / "grpo")),
                   "grpo_transfer": replace(plain, out=str(Path(tmp) / "grpo_transfer"), partner_reward=partner),
                   "grpo_transfer_per_budget": replace(plain, out=str(Path(tmp) / "per_budget"),
                                                       partner_reward=partner)}
        batched = transfer_reward.shared_calls
        trainers = {name: GRPOTrainer(cfg, progress=False) for name, cfg in configs.items()}
        timed = {name: [] for name in trainers}
        for step in range(args.steps + 1):  # step 0 warms up
            for name, trainer in trainers.items():
                transfer_reward.shared_calls = per_budget_calls if name.endswith("per_budget") else batched
                cpu0 = time.process_time()
                m = trainer.step(step)
                m["cpu_step"] = time.process_time() - cpu0
                transfer_reward.shared_calls = batched
                m["writer_tokens"] = m[RESPONSE_LENGTH] * plain.prompts_per_step * plain.group_size
                m.setdefault(TIME_PARTNER, 0.0)
                print(f"{name} step {step}: {m[TIME_STEP]:.2f}s (rollout {m[TIME_ROLLOUT]:.2f}, of it transfer "
                      f"{m[TIME_PARTNER]:.2f}; update {m[TIME_UPDATE]:.2f}); receiver tokens "
                      f"{m.get(TRANSFER_RECEIVER_TOKENS, 0):.0f}", file=sys.stderr)
                if step:
                    timed[name].append({k: float(v) for k, v in m.items() if isinstance(v, (int, float))})
    result = {name: summarize(rows) for name, rows in timed.items()}
    g, t = result["grpo"], result["grpo_transfer"]
    result["ratio_step_transfer_over_grpo"] = t[f"{TIME_STEP}_median"] / g[f"{TIME_STEP}_median"]
    result["ratio_cpu_transfer_over_grpo"] = t["cpu_step_median"] / g["cpu_step_median"]
    result["receiver_over_writer_tokens"] = t[f"{TRANSFER_RECEIVER_TOKENS}_mean"] / t["writer_tokens_mean"]
    per = result["grpo_transfer_per_budget"]
    result["ratio_step_per_budget_over_batched"] = per[f"{TIME_STEP}_median"] / t[f"{TIME_STEP}_median"]
    result["ratio_transfer_time_per_budget_over_batched"] = (per[f"{TIME_PARTNER}_median"]
                                                            / t[f"{TIME_PARTNER}_median"])
    result["setup"] = {
        "base": args.base or f"the quick demo's base (seed {args.seed}), built here in {build_s:.0f} s",
        "recipe": "demo_config(quick=True).train: prompts_per_step 8, group_size 8, max_new_tokens 82",
        "prompts_per_step": plain.prompts_per_step, "group_size": plain.group_size,
        "max_new_tokens": plain.sampling.max_new_tokens, "transfer": "samples 1, RLTR's uniform cut per response",
        "weight": args.weight, "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
        "torch": torch.__version__, "python": platform.python_version(), "load_average": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    write_json(args.out, result)
    print(f"step time transfer / grpo = {result['ratio_step_transfer_over_grpo']:.3f} (cpu "
          f"{result['ratio_cpu_transfer_over_grpo']:.3f}) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
