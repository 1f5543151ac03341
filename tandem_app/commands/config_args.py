"""The arguments every config-driven subcommand (`sft`, `train`) shares, and the config they build.

`--config FILE` then `key=value` overrides then explicit flags (`--model`, `--out`, ...):
the later wins. `tandem.config_files` does the loading and the type checks; the flags'
values merge as the typed values argparse gave them, never re-parsed as text.
"""

from __future__ import annotations

import argparse

from tandem.config_files import load_config


def add_config_arguments(p: argparse.ArgumentParser, config_name: str) -> None:
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides, applied after --config")
    p.add_argument("--config", help=f"YAML or JSON file with {config_name} fields")


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    p.add_argument("--no-progress", action="store_true", help="no progress bar or per-step console lines")


def config_from_args(cls, args: argparse.Namespace, flags: tuple[str, ...]):
    """`cls` from --config, then key=value overrides, then the explicit `flags` that were given."""
    explicit = {n: getattr(args, n) for n in flags if getattr(args, n, None) is not None}
    return load_config(cls, args.config, list(args.overrides), flags=explicit)
