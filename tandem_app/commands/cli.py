"""`tandem-rlvr`: one entry point, one subcommand per phase.

Each subcommand lives in its own module under `tandem_app.commands` and exposes
`register(subparsers)`, which adds its parser and sets `func(args) -> int`. Only the
module of the command given is imported: `--help`, `--version` and a mistyped command
answer without torch, from the index below (a test keeps it equal to what the modules
register). `key=value` overrides may follow the flags; a flag that is not one but names a
config key (`--steps 2`) is refused with the form to use (`steps=2`). Expected mistakes
raise `TandemError`; they are printed as one line and exit with 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from tandem.errors import run_reporting_errors

# command -> (its module under tandem_app.commands, its line in `tandem-rlvr --help`), in --help's order.
COMMANDS = {
    "build-tiny": ("build_tiny", "build a tiny Qwen3-config model and its tokenizer locally (no download)"),
    "boundaries": ("boundaries", "count (and optionally save) the boundary token ids of a tokenizer"),
    "rollout": ("rollout", "generate tandem (or solo) responses with the reference engine or vLLM"),
    "sft": ("sft", "supervised fine-tuning on worked solutions: writes the pre-RL base to OUT/model"),
    "train": ("train", "GRPO training of a senior: tandem rollouts with the frozen base as junior (tandem) or solo "
              "(grpo)"),
    "eval-solo": ("eval", "solo pass@k of one model on math benchmarks"),
    "eval-handoff": ("eval", "handoff pass@k: senior and junior alternate reasoning steps"),
    "eval-legibility": ("eval", "legibility (junior cross-entropy) and drift (JS divergence) of a senior"),
    "eval-plot": ("eval", "pass@k curves per benchmark from eval summaries"),
    "eval-table": ("eval", "Table 2: macro solo and handoff pass@k per checkpoint with bootstrap SEs"),
    "eval-figures": ("eval", "pass@k grid per benchmark and macro with bootstrap SE bands"),
    "distill": ("distill", "distil a teacher into a student: the teacher's solo traces, the student's SFT on them, "
                "its solo accuracy before and after"),
    "demo": ("demo", "build a tiny model, SFT it into the pre-RL base, train TRL and GRPO with the same seed and "
             "budget, evaluate solo / handoff accuracy and drift, and write report.md with figures"),
}


def version() -> str:
    """The installed package's version (its metadata, from pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("tandem-rlvr")
    except PackageNotFoundError:
        return "unknown (not installed: pip install -e .)"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser: `command`'s module registered for real (None: every module), the others as index lines."""
    return _parsers(command)[0]


def _parsers(command: str | None) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser and its command parsers by name."""
    parser = argparse.ArgumentParser(
        prog="tandem-rlvr",
        description="Tandem Reinforcement Learning: a trainable senior and a frozen junior co-write every rollout.",
    )
    parser.add_argument("--version", action="version", version=f"tandem-rlvr {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_line) in COMMANDS.items():
        if command is not None and name != command:
            sub.add_parser(name, help=help_line, add_help=False)
            continue
        registrar = importlib.import_module(f"tandem_app.commands.{module}")
        if hasattr(registrar, "register_command"):  # one module, several commands (eval-*): each on its own
            registrar.register_command(sub, name, help_line)
        else:
            registrar.register(sub)
    return parser, sub.choices


def _command(argv: list[str]) -> str | None:
    """The command named in `argv`: its first word that is not an option (the top level takes no values)."""
    return next((a for a in argv if not a.startswith("-")), None)


def parse(argv: list[str]) -> argparse.Namespace:
    """Parse `argv`; `key=value` words after the flags join the command's overrides, others are errors."""
    command = _command(argv)
    parser, commands = _parsers(command if command in COMMANDS else "")
    args, extra = parser.parse_known_args(argv)
    overrides = [a for a in extra if "=" in a and not a.startswith("-")]
    if extra and (overrides != extra or not hasattr(args, "overrides")):
        hint = key_as_flag(args, extra, argv)
        commands.get(command, parser).error(f"unrecognized arguments: {' '.join(extra)}" + (f"; {hint}" if hint else ""))
    if overrides:
        args.overrides = [*args.overrides, *overrides]
    return args


def key_as_flag(args: argparse.Namespace, extra: list[str], argv: list[str]) -> str | None:
    """For `--steps 2` (or `--steps=2`) where `steps` is a key of the command's config: "use steps=2"."""
    keys = getattr(args, "config_keys", None)  # set by config-driven commands (config_args.add_config_arguments)
    if keys is None:
        return None
    known = keys()
    for word in extra:
        name, _, value = word.partition("=")
        key = name.removeprefix("--").replace("-", "_")
        if not name.startswith("--") or key not in known:
            continue
        after = argv[argv.index(word) + 1:][:1]  # argparse may have taken the value as a positional word
        if not value and after and not after[0].startswith("-") and "=" not in after[0]:
            value = after[0]
        return f"{key} is a config key, not a flag: use {key}={value or 'VALUE'}"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    if not getattr(args, "func", None):
        build_parser("").print_help()
        return 2
    if getattr(args, "no_progress", False):
        quiet_library_bars()
    return run_reporting_errors(args.func, args)


def quiet_library_bars() -> None:
    """--no-progress silences the bars of the libraries a command calls too (transformers' shard writer, the hub's
    downloads), not only ours."""
    import os

    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


if __name__ == "__main__":
    sys.exit(main())
