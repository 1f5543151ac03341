"""`tandem-rlvr`: one entry point, one subcommand per phase.

Each subcommand lives in its own module under `tandem_app.commands` and exposes
`register(subparsers)`, which adds its parser and sets `func(args) -> int`.
Expected mistakes raise `TandemError`; they are printed as one line and exit with 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from tandem.errors import run_reporting_errors

# Module names under tandem_app.commands, in the order `--help` lists them.
SUBCOMMANDS = [
    "build_tiny",
    "boundaries",
    "rollout",
    "sft",
    "train",
    "eval",
    "demo",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tandem-rlvr",
        description="Tandem Reinforcement Learning: a trainable senior and a frozen junior co-write every rollout.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"tandem_app.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return run_reporting_errors(args.func, args)


if __name__ == "__main__":
    sys.exit(main())
