"""`tandem-rlvr train --method tandem|grpo`: GRPO of a senior with tandem or solo rollouts (`trl` = tandem)."""

from __future__ import annotations

import argparse
import shlex

from tandem_app.commands.config_args import (
    LOGGING_HELP,
    add_config_arguments,
    add_run_arguments,
    config_from_args,
    lazy_epilog,
    use_saved_config,
)

HELP = "GRPO training of a senior: tandem rollouts with the frozen base as junior (tandem) or solo (grpo)"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train",
        help=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=HELP + ". Every TrainConfig field can be set in "
        "--config or as key=value (e.g. steps=80 loss.junior_token_loss_weight=0.1 "
        "loss.clip_ratio_high=0.28).",
    )
    lazy_epilog(p, _epilog)
    add_config_arguments(p, "TrainConfig", _config_class)
    p.add_argument(
        "--method", choices=("tandem", "trl", "grpo"),
        help="tandem: senior + frozen junior co-write (trl is an alias: the paper's Tandem RL); grpo: senior solo",
    )
    p.add_argument("--model", help="the pre-RL base (senior initialisation and, for tandem, the junior)")
    p.add_argument("--out", help="run directory (checkpoint.pt, metrics.jsonl, the senior in OUT/model); "
                   "`--out DIR --resume` alone continues DIR with the config it saved")
    add_run_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tandem.errors import RunInterrupted
    from tandem.legacy import SENIOR_FRACTION_FIELD
    from tandem.metric_log import VAL_ACCURACY
    from tandem_app.train.grpo_trainer import GRPOTrainer
    from tandem_app.train.train_config import TrainConfig

    use_saved_config(args)
    cfg = config_from_args(TrainConfig, args, ("method", "model", "out"))
    try:
        trainer = GRPOTrainer(cfg, progress=not args.no_progress)
        summary = trainer.train(resume=args.resume, trust_unverified=args.trust_unverified)
    except RunInterrupted as e:
        raise RunInterrupted(f"{e}; continue with: tandem-rlvr train --out {shlex.quote(cfg.out)} --resume") from None
    print(f"{cfg.method}: {summary['steps']} steps in {summary['wall_seconds']:.0f} s; final reward "
          f"{summary['final_reward']:.3f}, validation accuracy {summary[VAL_ACCURACY]:.3f}, senior fraction "
          f"{summary[SENIOR_FRACTION_FIELD]:.3f}; senior in {summary['model']}")
    return 0


def _config_class():
    from tandem_app.train.train_config import TrainConfig

    return TrainConfig


def _epilog() -> str:
    from tandem.config_files import describe_config
    from tandem_app.train.train_config import TrainConfig

    return describe_config(TrainConfig) + "\n\n" + LOGGING_HELP
