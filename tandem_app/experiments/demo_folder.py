"""Whose folder `demo --out` is: the demo's check of a non-empty --out, torch-free.

`tandem-rlvr demo` runs it before it imports the pipeline (and torch), as `train` refuses a taken
--out: a refusal of bad input costs the interpreter's start, not torch's import
(`model_spec/PERFORMANCE.md`, "A refusal of bad input"). `run_demo`, `run_seeds` and the partner
experiment run it again for callers that skip the command.
"""

from __future__ import annotations

from pathlib import Path

from tandem.errors import TandemError
from tandem.io.run_lock import LOCK_NAME

DEMO_RECORD = "demo_config.json"  # the demo's config as it ran (`recorded_config`); marks a folder as a demo's
SEED_FOLDERS = "seed-*"  # marks a folder of `--seeds` or `--partner`: one demo per seed


def check_own_out(out: str | Path, marker: str) -> None:
    """A non-empty `out` must hold an earlier run of this kind (an entry matching `marker`), as `train` refuses a
    non-empty --out: the demo never mixes its files into another run's folder. Checked before any folder is made."""
    out = Path(out)
    try:
        entries = [p for p in out.iterdir() if p.name != LOCK_NAME] if out.is_dir() else []
    except OSError:  # unreadable: `run_lock.hold` refuses it, naming the folder and the fix
        return
    if entries and not any(p.match(marker) for p in entries):
        raise TandemError(f"--out {out} is not empty and holds no demo run (no {marker}); choose a new --out, or "
                          "the folder of an earlier demo to continue it")
