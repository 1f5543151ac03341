"""`tandem-rlvr sft`: supervised fine-tuning on the task's worked solutions -> the pre-RL base."""

from __future__ import annotations

from tandem_app.commands.config_args import LOGGING_HELP
from tandem_app.commands.config_command import ConfigCommand, Flag, add_config_command

HELP = "supervised fine-tuning on worked solutions: writes the pre-RL base to OUT/model"


def _config_class():
    from tandem_app.train.sft_config import SFTConfig

    return SFTConfig


def _epilog() -> str:
    from tandem.io.config_files import describe_config

    return describe_config(_config_class()) + "\n\n" + LOGGING_HELP


def _execute(cfg, args) -> str:
    from tandem.io.metric_log import SFT_VAL_ACCURACY
    from tandem_app.train.sft import run_sft

    summary = run_sft(cfg, resume=args.resume, progress=not args.no_progress, trust_unverified=args.trust_unverified)
    loss = "n/a" if summary.get("final_loss") is None else f"{summary['final_loss']:.3f}"
    return (f"sft: {summary['steps']} steps in {summary['wall_seconds']:.0f} s; final loss {loss}, validation "
            f"accuracy {summary[SFT_VAL_ACCURACY]:.3f}; base in {summary['model']}")


COMMAND = ConfigCommand(
    "sft", HELP, "Every SFTConfig field can be set in --config or as key=value (e.g. steps=600 task.max_steps=3).",
    "SFTConfig", _config_class,
    (Flag("model", "initial HF model directory (e.g. from `tandem-rlvr build-tiny`)"),
     Flag("out", "run directory (checkpoints, metrics.jsonl, the base in OUT/model); "
          "`--out DIR --resume` alone continues DIR with the config it saved")),
    _epilog, _execute)


def register(subparsers) -> None:
    add_config_command(subparsers, COMMAND)
