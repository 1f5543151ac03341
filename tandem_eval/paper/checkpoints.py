"""The checkpoints of the paper's evaluation: the defaults, the user's `LABEL=PATH`, and whether each can be had.

A checkpoint is a local directory (resolved) or a hub id `org/name`. The defaults are the
`base` (the junior and the drift reference) and the released TRL checkpoint; a user label
that names a default points it elsewhere. `check_available` names, in one line and before
any work, every checkpoint that cannot be loaded here (a directory without `config.json`, a
hub id missing from the local cache while the hub is offline or unreachable).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tandem.errors import TandemError

BASE_MODEL = "Qwen/Qwen3-4B-Instruct-2507"
RELEASED_TRL = "difanjiao/TT-Word-Qwen3-4B-Instruct-2507-DeepScaleR"
DEFAULT_CHECKPOINTS = (("base", BASE_MODEL), ("trl-released", RELEASED_TRL))
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_model(path: str, what: str) -> str:
    """A local model directory (returned resolved) or a hub id `org/name` (returned as is)."""
    if Path(path).is_dir():
        return str(Path(path).resolve())
    if HUB_ID.match(path) and not path.startswith((".", "/")):
        return path
    raise TandemError(f"{what} {path!r} is neither a local directory nor a hub id (org/name); "
                      "pass an existing checkpoint directory or a Hugging Face model id")


def resolve_checkpoints(specs: list[str], skip_defaults: list[str] | None = None) -> list[tuple[str, str]]:
    """Defaults (less `skip_defaults`), then the user's checkpoints in order; a user label that names a default
    replaces its path."""
    skip = set(skip_defaults or ())
    defaults = dict(DEFAULT_CHECKPOINTS)
    for label in sorted(skip):
        if label not in defaults:
            raise TandemError(f"--skip-default {label!r}: the defaults are {', '.join(defaults)}")
        if label == "base":
            raise TandemError("--skip-default base: the base is the junior and the drift reference; point it at "
                              "another checkpoint with --checkpoint base=DIR instead")
    given: dict[str, str] = {}
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            raise TandemError(f"bad --checkpoint {spec!r}; write LABEL=PATH, e.g. --checkpoint grpo=ckpts/grpo/step200")
        if not LABEL.match(label):
            raise TandemError(f"checkpoint label {label!r} must be letters, digits, '_', '.' or '-' (it names a folder)")
        if label in given:
            raise TandemError(f"checkpoint label {label!r} given twice; give each checkpoint its own label")
        given[label] = check_model(path, f"--checkpoint {label}")
    out = [(label, given.pop(label, check_model(path, label))) for label, path in DEFAULT_CHECKPOINTS
           if label not in skip or label in given]
    return out + list(given.items())


def hub_offline() -> bool:
    """Whether the environment declares the Hugging Face hub unreachable."""
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def unavailable(path: str) -> str | None:
    """Why a resolved checkpoint cannot be loaded here, or None.

    A local directory needs its `config.json`. A hub id is available when its `config.json`
    is in the local Hugging Face cache; otherwise, unless the hub is declared offline, one
    metadata request decides (a node without internet fails it at once).
    """
    if Path(path).is_dir():
        return None if (Path(path) / "config.json").is_file() else f"{path} has no config.json"
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(path, "config.json"), str):
        return None
    if hub_offline():
        return f"{path} is not in the local Hugging Face cache (HF_HUB_OFFLINE is set)"
    try:
        from huggingface_hub import HfApi

        HfApi().model_info(path, timeout=15)
    except Exception as exc:  # no network, no such repository, no access: each means the run would fail later
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        return f"{path} cannot be reached on the hub ({first})"
    return None


def check_available(checkpoints: list[tuple[str, str]], junior: str) -> None:
    """One line naming every checkpoint that cannot be had, and the fixes; before any work."""
    paths = dict(checkpoints)
    if junior not in paths.values():  # the junior is usually the base
        paths["--junior"] = junior
    problems = [f"{label}: {why}" for label, path in paths.items() if (why := unavailable(path))]
    if problems:
        raise TandemError(
            "cannot load " + "; ".join(problems) + ". Download each while online (huggingface-cli download ID), "
            "pass a local directory (--checkpoint LABEL=DIR), or leave a default out (--skip-default LABEL)")
