"""Torch's CPU threads for a command: one setting (`threads`), chosen for the models' size.

torch starts one intra-op thread per core. On this project's tiny models (about a million
parameters) a matrix product is too small to split, so the threads mostly wait on each
other, and on a machine with other work they oversubscribe the cores: the quick demo took
about 11 minutes with torch's default on 2 busy cores and under a minute with one thread
(`model_spec/PERFORMANCE.md`, "CPU threads"). So `threads=0` (the default, "auto") means one
thread when every model a command loads is small, else torch's own choice; a positive
value is used as given. `$OMP_NUM_THREADS`, when set, is the user's choice and auto leaves it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

AUTO = 0
# Below this many parameters one thread was fastest on every model measured (PERFORMANCE.md).
SMALL_MODEL_PARAMS = 20_000_000


def check_threads(requested: int, name: str = "--threads") -> None:
    """Refuse a negative thread count in one line naming the flag or key."""
    if requested < 0:
        from tandem.errors import TandemError

        raise TandemError(f"{name} must be >= 0 (0 = auto), got {requested}")


def estimated_params(model_dir: str | Path) -> int | None:
    """A decoder's parameter count from its config.json (embeddings, attention and MLP), or None if unreadable."""
    try:
        cfg = json.loads((Path(model_dir) / "config.json").read_text())
        hidden, layers = int(cfg["hidden_size"]), int(cfg["num_hidden_layers"])
        vocab, inner = int(cfg["vocab_size"]), int(cfg.get("intermediate_size", 4 * hidden))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    embeddings = vocab * hidden * (1 if cfg.get("tie_word_embeddings", True) else 2)
    return embeddings + layers * (4 * hidden * hidden + 3 * hidden * inner)


def choose_threads(requested: int, model_dirs: list[str | Path]) -> int | None:
    """The thread count to set, or None to leave torch's default (a large or unknown model, or $OMP_NUM_THREADS)."""
    if requested > 0:
        return requested
    if os.environ.get("OMP_NUM_THREADS"):
        return None
    sizes = [estimated_params(d) for d in model_dirs]
    if sizes and all(n is not None and n < SMALL_MODEL_PARAMS for n in sizes):
        return 1
    return None


def apply_threads(requested: int, model_dirs: list[str | Path]) -> int:
    """Set torch's intra-op threads for these models (see `choose_threads`); returns the count torch now uses."""
    import torch

    n = choose_threads(requested, model_dirs)
    if n is not None:
        torch.set_num_threads(n)
    return torch.get_num_threads()
