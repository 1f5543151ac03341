"""`tandem-rlvr sft`: supervised fine-tuning on the task's worked solutions -> the pre-RL base."""

from __future__ import annotations

import argparse

from tandem_app.commands.config_args import add_config_arguments, add_run_arguments, config_from_args

HELP = "supervised fine-tuning on worked solutions: writes the pre-RL base to OUT/model"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sft",
        help=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_epilog(),
        description=HELP + ". Every SFTConfig field can be set in "
        "--config or as key=value (e.g. steps=600 task.max_steps=3).",
    )
    add_config_arguments(p, "SFTConfig")
    p.add_argument("--model", help="initial HF model directory (e.g. from `tandem-rlvr build-tiny`)")
    p.add_argument("--out", help="run directory (checkpoints, metrics.jsonl, the base in OUT/model)")
    add_run_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tandem_app.train.sft import SFTConfig, run_sft

    cfg = config_from_args(SFTConfig, args, ("model", "out"))
    summary = run_sft(cfg, resume=args.resume, progress=not args.no_progress)
    print(f"base written to {summary['model']} (validation greedy accuracy {summary['val_greedy_acc']:.3f})")
    return 0


def _epilog() -> str:
    from tandem.config_files import describe_config
    from tandem_app.train.sft import SFTConfig

    return describe_config(SFTConfig)
