"""Checkpoints that prove themselves, and bit-for-bit resume.

A checkpoint holds the model and optimizer state, every RNG state the loop touches, the
step count, the run's config and, for a junior that follows the senior
(`tandem.junior_update`), the junior. Batches are a pure function of (seed, step)
(`data.batch_indices`) and sampling uses counter-based uniforms keyed per request, so
restoring this state continues the run exactly.

Writing one, in order: refuse a state holding a NaN or inf tensor; serialise it in
memory; write it to `checkpoint.pt.tmp`, flush it to disk and read it back against its
sha256; record that digest in `checkpoint.json`; only then move the old checkpoint to
`checkpoint.prev.pt` and the new one into place. A crash at any point leaves at least
one checkpoint whose digest is recorded, and a full disk stops the run with one line and
no `.tmp` left. Reading one takes the newest file whose sha256 is recorded, so a damaged
`checkpoint.pt` falls back to `checkpoint.prev.pt` with a note, never loading silently.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import shutil
from pathlib import Path

import torch

from tandem import junior_update
from tandem.errors import RunFailed, TandemError
from tandem.jsonl import write_json
from tandem.run_lock import note
from tandem_app.train.finite import first_non_finite

CHECKPOINT_NAME = "checkpoint.pt"
PREVIOUS_NAME = "checkpoint.prev.pt"
INDEX_NAME = "checkpoint.json"  # {"verified": [{"sha256": ..., "step": ...}, ...]}, newest first
KEEP = 2  # the checkpoint and the one before it


def rng_state() -> dict:
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_index(run_dir: Path) -> list[dict]:
    try:
        return json.loads((run_dir / INDEX_NAME).read_text(encoding="utf-8"))["verified"]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _write_verified(tmp: Path, data: bytes) -> None:
    """Write `data` to `tmp`, flushed to the disk, and read it back: the file is the bytes meant."""
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if _sha256(tmp.read_bytes()) != _sha256(data):
        raise OSError(f"{tmp} reads back other bytes than were written")


def save_checkpoint(run_dir: str | Path, model, optimizer, step: int, extra: dict | None = None,
                    junior=None) -> Path:
    """Write `run_dir/checkpoint.pt` (see the module docstring); return its path."""
    run_dir = Path(run_dir)
    path, tmp = run_dir / CHECKPOINT_NAME, run_dir / (CHECKPOINT_NAME + ".tmp")
    run_dir.mkdir(parents=True, exist_ok=True)
    state = {"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": rng_state(),
             "extra": extra or {}}
    if junior is not None:
        state[junior_update.CHECKPOINT_NAME] = junior.state_dict()
    bad = first_non_finite({k: state[k] for k in ("model", "optimizer", junior_update.CHECKPOINT_NAME) if k in state})
    if bad is not None:
        raise RunFailed(f"step {step}: {bad} holds NaN or inf; no checkpoint written ({stopped_words(run_dir)})")
    buffer = io.BytesIO()
    torch.save(state, buffer)
    data = buffer.getvalue()
    try:
        _write_verified(tmp, data)
        index = [{"sha256": _sha256(data), "step": step}, *_read_index(run_dir)][:KEEP + 1]
        write_json(run_dir / INDEX_NAME, {"verified": index})
        if path.exists():
            os.replace(path, run_dir / PREVIOUS_NAME)
        os.replace(tmp, path)
    except OSError as e:
        for left in (tmp, run_dir / (INDEX_NAME + ".tmp")):  # write_json's own temporary file
            with contextlib.suppress(OSError):
                left.unlink()
        raise RunFailed(f"cannot write checkpoint {path} at step {step}: {e.strerror or e} ({stopped_words(run_dir)}); "
                        "free space and resume with --resume") from None
    return path


def _recorded(run_dir: Path) -> dict[str, int]:
    """{sha256: step} of the checkpoints `checkpoint.json` vouches for."""
    return {e["sha256"]: e["step"] for e in _read_index(run_dir) if isinstance(e, dict) and "sha256" in e}


def last_good(run_dir: str | Path) -> tuple[Path, int] | None:
    """(path, step) of the newest checkpoint in `run_dir` that matches its recorded sha256, or None."""
    run_dir = Path(run_dir)
    recorded = _recorded(run_dir)
    for path in (run_dir / CHECKPOINT_NAME, run_dir / PREVIOUS_NAME):
        if path.is_file():
            step = recorded.get(_sha256(path.read_bytes()))
            if step is not None:
                return path, step
    return None


def stopped_words(run_dir: str | Path) -> str:
    """A stopped run's last good checkpoint, in words (for its one error line)."""
    good = last_good(run_dir)
    return f"last good checkpoint {good[0]}, step {good[1]}" if good else "no checkpoint saved yet"


def kept_words(run_dir: str | Path, logged: int | None, steps: int) -> str:
    """What an interrupted run leaves behind, in words: its last good checkpoint and metrics rows."""
    good = last_good(run_dir)
    saved = f"kept {good[0]} (step {good[1]} of {steps})" if good else "no checkpoint yet"
    rows = "no metrics rows" if logged is None else f"{Path(run_dir) / 'metrics.jsonl'} through step {logged}"
    return f"{saved} and {rows}"


def read_checkpoint(run_dir: str | Path, map_location="cpu") -> dict | None:
    """The newest checkpoint of `run_dir` whose sha256 is recorded (None when there is none)."""
    run_dir = Path(run_dir)
    recorded = _recorded(run_dir)
    candidates = [p for p in (run_dir / CHECKPOINT_NAME, run_dir / PREVIOUS_NAME) if p.is_file()]
    if not candidates:
        return None
    for i, path in enumerate(candidates):
        data = path.read_bytes()
        if _sha256(data) not in recorded:
            if recorded:
                note(f"{path} does not match the sha256 recorded in {run_dir / INDEX_NAME} (damaged); not used")
                continue
            note(f"{path} has no recorded sha256 (written before checksums); loading it unverified")
        state = _load(path, data, map_location)
        if i > 0:
            note(f"resuming from the previous checkpoint {path} (step {state['step']})")
        return state
    raise TandemError(f"no checkpoint in {run_dir} matches its recorded sha256 (damaged files); "
                      "start over in a new --out")


def _load(path: Path, data: bytes, map_location) -> dict:
    try:
        return torch.load(io.BytesIO(data), map_location=map_location, weights_only=False)
    except Exception as e:  # a truncated or foreign file
        raise TandemError(f"checkpoint {path} cannot be read ({type(e).__name__}); delete it and restart") from None


def restore_checkpoint(state: dict, model, optimizer, junior=None) -> int:
    """Put a read checkpoint's model, optimizer, RNG (and `junior`'s) states back; return its step."""
    if junior is not None and junior_update.CHECKPOINT_NAME not in state:
        raise TandemError("the checkpoint holds no junior, but this run's junior follows the senior "
                          "(tandem.junior_update); resume with the config the run was started with")
    model.load_state_dict(state["model"])
    if junior is not None:
        junior.load_state_dict(state[junior_update.CHECKPOINT_NAME])
    optimizer.load_state_dict(state["optimizer"])
    set_rng_state(state["rng"])
    return int(state["step"])


def load_checkpoint(run_dir: str | Path, model, optimizer, map_location="cpu", junior=None) -> tuple[int, dict]:
    """Read and restore `run_dir`'s checkpoint; return (step, extra)."""
    state = read_checkpoint(run_dir, map_location)
    if state is None:
        raise TandemError(f"--resume: no checkpoint in {run_dir}; start without --resume or point --out at the run")
    return restore_checkpoint(state, model, optimizer, junior), state.get("extra", {})


def has_checkpoint(run_dir: str | Path) -> bool:
    return any((Path(run_dir) / name).is_file() for name in (CHECKPOINT_NAME, PREVIOUS_NAME))


def save_pretrained_atomic(model, tokenizer, out: str | Path) -> Path:
    """Save an HF model + tokenizer directory; readers never see a half-written one."""
    out = Path(out)
    tmp, old = out.with_name(out.name + ".tmp"), out.with_name(out.name + ".old")
    for p in (tmp, old):
        if p.exists():
            shutil.rmtree(p)
    bad = first_non_finite(dict(model.state_dict()))
    if bad is not None:
        raise RunFailed(f"{bad} holds NaN or inf; {out} not written")
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RunFailed(f"cannot write {out}: {e.strerror or e}; free space and resume with --resume") from None
    if out.exists():
        os.replace(out, old)
    os.replace(tmp, out)
    if old.exists():
        shutil.rmtree(old)
    return out
