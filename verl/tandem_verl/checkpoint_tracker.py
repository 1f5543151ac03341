"""Crash-safe checkpoints on verl 0.9.1: the tracker written atomically, repaired at resume, retention after it.

verl's `resume_mode=auto` follows `latest_checkpointed_iteration.txt` (the tracker). verl
0.9.1 deletes the previous checkpoint's actor files as soon as the new ones are written (its
checkpoint manager's retention), then writes `data.pt`, then the tracker; a kill between
the two leaves the tracker naming a checkpoint whose actor is gone. `TandemPPOTrainer`
therefore saves with verl's retention off (`retention_off`), points the tracker at the new
step atomically (`write_tracker`) and only then removes the surplus checkpoints whole
(`remove_checkpoint`); at resume a tracker torn by a kill mid-write is pointed back at the
newest whole checkpoint (`repair_tracker`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from omegaconf import DictConfig, open_dict

TRACKER = "latest_checkpointed_iteration.txt"  # what verl's resume_mode=auto follows
RETENTION_KEYS = ("max_actor_ckpt_to_keep", "max_critic_ckpt_to_keep", "remove_previous_ckpt_in_save")


def write_tracker(root: Path, step: int) -> None:
    """Point the tracker at `step` atomically: a reader sees the old number or the new one, never a torn file."""
    tmp = root / f".{TRACKER}.tmp"
    with open(tmp, "w") as f:
        f.write(str(step))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, root / TRACKER)


def tracker_names(root: Path, step: int) -> bool:
    """Whether the tracker names `step` (an async save writes it only when the save lands)."""
    tracker = root / TRACKER
    return tracker.is_file() and tracker.read_text().strip() == str(step)


def complete_steps(root: Path) -> list[int]:
    """Steps whose checkpoint is whole: verl writes `data.pt` only after every actor file is saved."""
    steps = []
    for d in root.glob("global_step_*"):
        tail = d.name.removeprefix("global_step_")
        if tail.isdigit() and (d / "data.pt").is_file() and (d / "actor").is_dir():
            steps.append(int(tail))
    return sorted(steps)


def remove_checkpoint(root: Path, step: int) -> None:
    """Delete global_step_<step>, renamed out of verl's naming first so no half-deleted one can be resumed."""
    src = root / f"global_step_{step}"
    if src.is_dir():
        doomed = root / f".deleting-global_step_{step}"
        shutil.rmtree(doomed, ignore_errors=True)
        os.replace(src, doomed)
        shutil.rmtree(doomed, ignore_errors=True)


def repair_tracker(root: Path) -> int | None:
    """A tracker left empty or torn by a kill mid-write points back at the newest whole checkpoint.

    Returns the step it now names (None: no tracker, or no whole checkpoint, so verl starts
    from scratch). A readable tracker is left exactly as it is.
    """
    tracker = root / TRACKER
    if not tracker.is_file():
        return None
    text = tracker.read_text().strip()
    if text.isdigit():
        return int(text)
    steps = complete_steps(root)
    if not steps:
        tracker.unlink()
        print(f"[tandem] {tracker} was unreadable ({text!r}) and no checkpoint is whole: training from scratch")
        return None
    write_tracker(root, steps[-1])
    print(f"[tandem] {tracker} was unreadable ({text!r}): resuming from the newest whole checkpoint, step {steps[-1]}")
    return steps[-1]


@contextlib.contextmanager
def retention_off(trainer: DictConfig):
    """verl's retention off for one save (`trainer` is verl's `trainer:` section); yields the settings it had."""
    saved = {key: trainer.get(key) for key in RETENTION_KEYS}
    with open_dict(trainer):
        trainer.max_actor_ckpt_to_keep = trainer.max_critic_ckpt_to_keep = None
        trainer.remove_previous_ckpt_in_save = False
    try:
        yield saved
    finally:
        with open_dict(trainer):
            for key, value in saved.items():
                trainer[key] = value


def keep_count(retention: dict) -> int | None:
    """How many of a process's checkpoints verl's retention settings keep (None or <= 0: all)."""
    return 1 if retention["remove_previous_ckpt_in_save"] else retention["max_actor_ckpt_to_keep"]
