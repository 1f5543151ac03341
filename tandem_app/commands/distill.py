"""`tandem-rlvr distill`: a teacher's solo traces, a student fine-tuned on them, its solo accuracy before and after."""

from __future__ import annotations

import argparse
import shlex
import textwrap

from tandem_app.commands.config_args import (
    add_config_arguments,
    add_run_arguments,
    config_from_args,
    lazy_epilog,
    use_saved_config,
)

HELP = "distil a teacher into a student: the teacher's solo traces, the student's SFT on them, its solo accuracy " \
       "before and after"
EXAMPLE = """example (the demo's base distilled from a GRPO senior, at a budget of 20k trace tokens):
  tandem-rlvr distill --teacher runs/demo/grpo/model --student runs/demo/sft/model --out runs/distill-grpo \\
      token_budget=20000 steps=200
  tandem-rlvr distill --out runs/distill-grpo --resume     # continues with the config it saved

cost: with the defaults on the demo's tiny models (1000 traces, 200 SFT steps of 32, 200 test problems x 4
samples before and after) 179 s on 2 CPU cores (2026-11-28: traces 17 s, each evaluation 13 s, SFT 130 s)."""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "distill",
        help=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=HELP + ". Every DistillConfig key can be set in --config or as key=value; each is explained "
        "below. Writes OUT/traces.jsonl, OUT/student (the fine-tuned student), OUT/eval and OUT/summary.json "
        "(accuracy_before, accuracy_after, gain, gain_se paired over problems), reusing every finished phase.",
    )
    lazy_epilog(p, _epilog)
    add_config_arguments(p, "DistillConfig", _config_class)
    p.add_argument("--teacher", help="the teacher's HF model dir (writes the traces)")
    p.add_argument("--student", help="the student's HF model dir (fine-tuned on the traces)")
    p.add_argument("--out", help="run directory; `--out DIR --resume` alone continues DIR with the config it saved")
    add_run_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tandem.errors import RunInterrupted
    from tandem_app.distill.config import DistillConfig
    from tandem_app.distill.run import run_distill
    from tandem_app.distill.summary import final_line

    use_saved_config(args)
    cfg = config_from_args(DistillConfig, args, ("teacher", "student", "out"))
    try:
        summary = run_distill(cfg, resume=args.resume, progress=not args.no_progress,
                              trust_unverified=args.trust_unverified)
    except (RunInterrupted, KeyboardInterrupt) as e:
        raise RunInterrupted(f"{e or 'interrupted'}; continue with: tandem-rlvr distill --out "
                             f"{shlex.quote(cfg.out)} --resume") from None
    print(final_line(summary))
    return 0


def _config_class():
    from tandem_app.distill.config import DistillConfig

    return DistillConfig


def _epilog() -> str:
    from tandem.config_files import describe_config
    from tandem_app.distill.config import KEY_HELP, DistillConfig

    lines = ["config keys:"]
    for key, text in KEY_HELP.items():
        lines += textwrap.wrap(text, width=100, initial_indent=f"  {key:<22}", subsequent_indent=" " * 24)
    return "\n".join(lines) + "\n\n" + describe_config(DistillConfig) + "\n\n" + EXAMPLE
