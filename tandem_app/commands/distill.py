"""`tandem-rlvr distill`: a teacher's solo traces, a student fine-tuned on them, its solo accuracy before and after."""

from __future__ import annotations

import textwrap

from tandem_app.commands.config_args import SAVED_CONFIG
from tandem_app.commands.config_command import ConfigCommand, Flag, add_config_command

HELP = "distil a teacher into a student: the teacher's solo traces, the student's SFT on them, its solo accuracy " \
       "before and after"
EXAMPLE = """example (the demo's base distilled from a GRPO senior, at a budget of 20k trace tokens):
  tandem-rlvr distill --teacher runs/demo/grpo/model --student runs/demo/sft/model --out runs/distill-grpo \\
      token_budget=20000 steps=200
  tandem-rlvr distill --out runs/distill-grpo --resume     # continues with the config it saved

cost: with the defaults on the demo's tiny models (1000 traces, 200 SFT steps of 32, 200 test problems x 4
samples before and after) 179 s on 2 CPU cores (2026-11-28: traces 17 s, each evaluation 13 s, SFT 130 s)."""


def _config_class():
    from tandem_app.distill.config import DistillConfig

    return DistillConfig


def _epilog() -> str:
    from tandem.io.config_files import describe_config
    from tandem_app.distill.config import KEY_HELP

    lines = ["config keys:"]
    for key, text in KEY_HELP.items():
        lines += textwrap.wrap(text, width=100, initial_indent=f"  {key:<22}", subsequent_indent=" " * 24)
    return "\n".join(lines) + "\n\n" + describe_config(_config_class()) + "\n\n" + EXAMPLE


def _execute(cfg, args) -> str:
    from tandem_app.distill.run import run_distill
    from tandem_app.distill.summary import final_line

    return final_line(run_distill(cfg, resume=args.resume, progress=not args.no_progress,
                                  trust_unverified=args.trust_unverified))


COMMAND = ConfigCommand(
    "distill", HELP, "Every DistillConfig key can be set in --config or as key=value; each is explained below. "
    "Writes OUT/traces.jsonl, OUT/student (the fine-tuned student), OUT/eval and OUT/summary.json "
    "(accuracy_before, accuracy_after, gain, gain_se paired over problems), reusing every finished phase.",
    "DistillConfig", _config_class,
    (Flag("teacher", "the teacher's HF model dir (writes the traces)"),
     Flag("student", "the student's HF model dir (fine-tuned on the traces)"),
     Flag("out", "run directory; `--out DIR --resume` alone continues DIR with the config it saved")),
    _epilog, _execute, run_files=(SAVED_CONFIG,))  # its config.json comes first; its checkpoints are OUT/student's


def register(subparsers) -> None:
    add_config_command(subparsers, COMMAND)
