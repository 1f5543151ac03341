"""`tandem-rlvr sft`: supervised fine-tuning on the task's worked solutions -> the pre-RL base."""

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

HELP = "supervised fine-tuning on worked solutions: writes the pre-RL base to OUT/model"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sft",
        help=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=HELP + ". Every SFTConfig field can be set in "
        "--config or as key=value (e.g. steps=600 task.max_steps=3).",
    )
    lazy_epilog(p, _epilog)
    add_config_arguments(p, "SFTConfig", _config_class)
    p.add_argument("--model", help="initial HF model directory (e.g. from `tandem-rlvr build-tiny`)")
    p.add_argument("--out", help="run directory (checkpoints, metrics.jsonl, the base in OUT/model); "
                   "`--out DIR --resume` alone continues DIR with the config it saved")
    add_run_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tandem.errors import RunInterrupted
    from tandem.metric_log import SFT_VAL_ACCURACY
    from tandem_app.train.sft import SFTConfig, run_sft

    use_saved_config(args)
    cfg = config_from_args(SFTConfig, args, ("model", "out"))
    try:
        summary = run_sft(cfg, resume=args.resume, progress=not args.no_progress,
                          trust_unverified=args.trust_unverified)
    except RunInterrupted as e:
        raise RunInterrupted(f"{e}; continue with: tandem-rlvr sft --out {shlex.quote(cfg.out)} --resume") from None
    loss = "n/a" if summary.get("final_loss") is None else f"{summary['final_loss']:.3f}"
    print(f"sft: {summary['steps']} steps in {summary['wall_seconds']:.0f} s; final loss {loss}, validation "
          f"accuracy {summary[SFT_VAL_ACCURACY]:.3f}; base in {summary['model']}")
    return 0


def _config_class():
    from tandem_app.train.sft_config import SFTConfig

    return SFTConfig


def _epilog() -> str:
    from tandem.config_files import describe_config
    from tandem_app.train.sft_config import SFTConfig

    return describe_config(SFTConfig) + "\n\n" + LOGGING_HELP
