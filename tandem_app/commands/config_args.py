"""The arguments every config-driven subcommand (`sft`, `train`, `distill`) shares, and the config they build.

`--config FILE` then `key=value` overrides then explicit flags (`--model`, `--out`, ...):
the later wins. `tandem.io.config_files` does the loading and the type checks; the flags'
values merge as the typed values argparse gave them, never re-parsed as text. A `key=value`
may also come after the flags (`tandem_app.commands.cli` hands those to `overrides`). The
config's model directory is checked before any model is loaded: a missing one is one line.
The commands themselves are one template (`tandem_app.commands.config_command`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tandem.io.config_files import load_config


LOGGING_HELP = """logging keys (both trainers):
  metrics_format   rows of OUT/metrics.jsonl: flat {"step": s, name: value, ...} or verl
                   {"step": s, "data": {name: value, ...}} (verl's file logger); both read alike
  tensorboard      true: also log every step to tensorboard (needs `pip install tensorboard`)
  tensorboard_dir  the tensorboard event files' folder (default OUT/tensorboard)
  wandb            true: also log to wandb (wandb_project; wandb_mode offline unless set)"""


def add_config_arguments(p: argparse.ArgumentParser, config_name: str, config_class) -> None:
    """`KEY=VALUE` overrides and `--config`; `config_class()` (imported only when asked) names the keys."""
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides, applied after --config")
    p.add_argument("--config", help=f"YAML or JSON file with {config_name} fields")
    p.set_defaults(config_keys=lambda: config_keys(config_class()))


def config_keys(cls, prefix: str = "") -> set[str]:
    """Every key of the config dataclass `cls`, a nested section's keys dotted (`sampling.temperature`)."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    keys = set()
    for f in dataclasses.fields(cls):
        keys.add(prefix + f.name)
        if dataclasses.is_dataclass(hints.get(f.name)):
            keys |= config_keys(hints[f.name], f"{prefix}{f.name}.")
    return keys


def lazy_epilog(p: argparse.ArgumentParser, epilog) -> None:
    """Build `p`'s epilog only when its help is printed: listing a config's fields imports its
    trainer (and torch), which an argument error or another command's help never needs."""
    format_help = p.format_help

    def with_epilog() -> str:
        if p.epilog is None:
            p.epilog = epilog()
        return format_help()

    p.format_help = with_epilog


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    p.add_argument("--no-progress", action="store_true", help="no progress bar or per-step console lines")
    p.add_argument("--trust-unverified", action="store_true",
                   help="--resume from a checkpoint no checksum record vouches for (records deleted or damaged, "
                   "or a run older than checksums); refused without this flag")


def config_from_args(cls, args: argparse.Namespace, flags: tuple[str, ...]):
    """`cls` from --config, then key=value overrides, then the explicit `flags` that were given."""
    from tandem.models.loading import check_model_path

    explicit = {n: getattr(args, n) for n in flags if getattr(args, n, None) is not None}
    cfg = load_config(cls, args.config, list(args.overrides), flags=explicit)
    if getattr(cfg, "model", None):
        check_model_path(cfg.model)
    return cfg


# What a run's folder holds from its start on: the config it saved (`tandem_app.train.resume.CONFIG_NAME`,
# `tandem_app.distill.run.CONFIG`), then its checkpoints (`tandem_app.train.checkpoint`); named here, torch-free,
# so `--resume` on a folder that is no run is refused before the command's imports.
SAVED_CONFIG = "config.json"
CHECKPOINTS = ("checkpoint.pt", "checkpoint.prev.pt")


def use_saved_config(args: argparse.Namespace, run_files: tuple[str, ...] = (SAVED_CONFIG, *CHECKPOINTS)) -> None:
    """`--resume --out DIR` alone continues DIR with the config the run saved (DIR/config.json). A DIR that is
    missing, empty, or holds none of `run_files` (a run's config or checkpoint: someone else's files) holds nothing
    to resume, which is said before any config is read (not a missing key) and before anything is written."""
    from tandem.errors import TandemError

    out = Path(args.out) if args.out else None
    if args.resume and out is not None and (not out.exists() or _empty_folder(out)):
        why = "no such folder" if not out.exists() else "the folder is empty"
        raise TandemError(f"nothing to resume in {out} ({why}); drop --resume to start a new run there")
    if args.resume and out is not None and _others_files(out, run_files):
        raise TandemError(f"nothing to resume in {out}: it holds no run ({_neither(run_files)}); point --out at the "
                          "run's folder, or drop --resume and choose a new --out")
    saved = out / SAVED_CONFIG if out else None
    if args.resume and args.config is None and saved is not None and saved.is_file():
        args.config = str(saved)


def _others_files(out: Path, run_files: tuple[str, ...]) -> bool:
    """`out` holds files but none of a run's: not a run to resume. A folder holding only a lock is left to the run's
    lock (which names a live holder, or takes a dead one's half-started folder over)."""
    from tandem.io.run_lock import LOCK_NAME

    try:
        names = {p.name for p in out.iterdir()} if out.is_dir() else set()
    except OSError:  # unreadable: the run's own checks name it
        return False
    return bool(names - {LOCK_NAME}) and not any((out / name).is_file() for name in run_files)


def _neither(names: tuple[str, ...]) -> str:
    """'no a', 'no a or b', 'no a, b or c'."""
    return "no " + (names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}")


def _empty_folder(path: Path) -> bool:
    """A folder with nothing in it (one that cannot be read is left to the run's own checks, which name it)."""
    try:
        return path.is_dir() and not any(path.iterdir())
    except OSError:
        return False
