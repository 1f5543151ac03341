"""`tandem-rlvr train --method trl|grpo`: GRPO of a senior with tandem (trl) or solo (grpo) rollouts."""

from __future__ import annotations

import argparse

from tandem.commands.sft import flag_overrides
from tandem.train.config import load_config

HELP = "GRPO training of a senior: tandem rollouts with the frozen base as junior (trl) or solo (grpo)"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train",
        help=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_epilog(),
        description=HELP + ". Every TrainConfig field can be set in "
        "--config or as key=value (e.g. steps=80 tandem.junior_token_loss_weight=0.1 "
        "loss.clip_ratio_high=0.28).",
    )
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides, applied after --config")
    p.add_argument("--method", choices=("trl", "grpo"), help="trl: senior + frozen junior co-write; grpo: senior solo")
    p.add_argument("--config", help="YAML or JSON file with TrainConfig fields")
    p.add_argument("--model", help="the pre-RL base (senior initialisation and, for trl, the junior)")
    p.add_argument("--out", help="run directory (checkpoint.pt, metrics.jsonl, the senior in OUT/model)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    p.add_argument("--no-progress", action="store_true", help="no progress bar or per-step console lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tandem.train.grpo_trainer import GRPOTrainer, TrainConfig

    overrides = list(args.overrides) + flag_overrides(args, ("method", "model", "out"))
    cfg = load_config(TrainConfig, args.config, overrides)
    summary = GRPOTrainer(cfg, progress=not args.no_progress).train(resume=args.resume)
    print(f"{cfg.method}: senior written to {summary['model']}")
    return 0


def _epilog() -> str:
    from tandem.train.config import describe_config
    from tandem.train.grpo_trainer import TrainConfig

    return describe_config(TrainConfig)
