"""`tandem-rlvr train --method tandem|grpo`: GRPO of a senior with tandem or solo rollouts (`trl` = tandem)."""

from __future__ import annotations

import argparse

from tandem_app.commands.config_args import add_config_arguments, add_run_arguments, config_from_args

HELP = "GRPO training of a senior: tandem rollouts with the frozen base as junior (tandem) or solo (grpo)"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train",
        help=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_epilog(),
        description=HELP + ". Every TrainConfig field can be set in "
        "--config or as key=value (e.g. steps=80 loss.junior_token_loss_weight=0.1 "
        "loss.clip_ratio_high=0.28).",
    )
    add_config_arguments(p, "TrainConfig")
    p.add_argument(
        "--method", choices=("tandem", "trl", "grpo"),
        help="tandem: senior + frozen junior co-write (trl is an alias: the paper's Tandem RL); grpo: senior solo",
    )
    p.add_argument("--model", help="the pre-RL base (senior initialisation and, for tandem, the junior)")
    p.add_argument("--out", help="run directory (checkpoint.pt, metrics.jsonl, the senior in OUT/model)")
    add_run_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tandem_app.train.grpo_trainer import GRPOTrainer, TrainConfig

    cfg = config_from_args(TrainConfig, args, ("method", "model", "out"))
    summary = GRPOTrainer(cfg, progress=not args.no_progress).train(resume=args.resume)
    print(f"{cfg.method}: senior written to {summary['model']}")
    return 0


def _epilog() -> str:
    from tandem.config_files import describe_config
    from tandem_app.train.grpo_trainer import TrainConfig

    return describe_config(TrainConfig)
