"""Checkpoints that prove themselves, and bit-for-bit resume.

A checkpoint holds the model and optimizer state, every RNG state the loop touches, the
step count, the run's config and, for a junior that follows the senior
(`tandem.junior_update`), the junior. Batches are a pure function of (seed, step)
(`data.batch_indices`) and sampling uses counter-based uniforms keyed per request, so
restoring this state continues the run exactly.

Writing one, in order: refuse a state holding a NaN or inf tensor; serialise it in
memory; write it to `checkpoint.pt.tmp`, flush it to disk and read it back against its
sha256; record that digest twice, in `checkpoint.sha256` and in `checkpoint.json`; only
then move the old checkpoint to `checkpoint.prev.pt` and the new one into place. A crash
at any point leaves at least one checkpoint whose digest is recorded, and a full disk
stops the run with one line and no `.tmp` left.

Reading one takes the newest file whose sha256 either record vouches for, so a damaged
`checkpoint.pt` falls back to `checkpoint.prev.pt` with a note naming it, and a damaged
or deleted record is made good by the other one. Damage can never switch the check off:
a checkpoint that no record vouches for (both records unreadable or gone, or a run older
than the checksums) is unverified and refused unless the user passes `--trust-unverified`.
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

from tandem.process import junior_update
from tandem.errors import RunFailed, TandemError
from tandem.io.jsonl import write_json
from tandem.io.run_lock import note
from tandem_app.train.finite import first_non_finite
from tandem_eval.core.prompts import write_prompt_format

# The embedded trainers prompt with the bare problem (`tandem_app.train.data.prompt_ids`), so every
# model they save records no instruction: the eval tools then ask it as it was trained.
TRAINED_INSTRUCTION = ""

CHECKPOINT_NAME = "checkpoint.pt"
PREVIOUS_NAME = "checkpoint.prev.pt"
INDEX_NAME = "checkpoint.json"  # {"verified": [{"sha256": ..., "step": ...}, ...]}, newest first
DIGESTS_NAME = "checkpoint.sha256"  # the second record: one "SHA256 STEP" line per checkpoint, newest first
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


def _read_index(run_dir: Path) -> list[dict] | None:
    """`checkpoint.json`'s entries ([] when it is absent); None when it is there but cannot be read (damage)."""
    path = run_dir / INDEX_NAME
    if not path.exists():
        return []
    try:
        entries = json.loads(path.read_bytes())["verified"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(entries, list):
        return None
    return [{"sha256": e["sha256"], "step": e["step"]} for e in entries
            if isinstance(e, dict) and isinstance(e.get("sha256"), str) and isinstance(e.get("step"), int)]


def _read_digests(run_dir: Path) -> list[dict] | None:
    """`checkpoint.sha256`'s entries ([] when it is absent); None when it holds no well-formed line (damage)."""
    path = run_dir / DIGESTS_NAME
    if not path.exists():
        return []
    try:
        lines = path.read_bytes().decode("ascii", errors="replace").splitlines()
    except OSError:
        return None
    entries = []
    for line in lines:  # a damaged line vouches for nothing; the others still do
        digest, _, step = line.strip().partition(" ")
        if len(digest) == 64 and all(c in "0123456789abcdef" for c in digest) and step.isdigit():
            entries.append({"sha256": digest, "step": int(step)})
    return entries or None


def _entries(run_dir: Path) -> list[dict]:
    """Every recorded (sha256, step), newest first: the index's, then the second record's it lacks."""
    index, digests = _read_index(run_dir) or [], _read_digests(run_dir) or []
    known = {e["sha256"] for e in index}
    return [*index, *(e for e in digests if e["sha256"] not in known)]


def _damaged_records(run_dir: Path) -> list[Path]:
    """The record files that are there but cannot be read."""
    return [run_dir / name for name, read in ((INDEX_NAME, _read_index), (DIGESTS_NAME, _read_digests))
            if read(run_dir) is None]


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
        index = [{"sha256": _sha256(data), "step": step}, *_entries(run_dir)][:KEEP + 1]
        _write_digests(run_dir, index)
        write_json(run_dir / INDEX_NAME, {"verified": index})
        if path.exists():
            os.replace(path, run_dir / PREVIOUS_NAME)
        os.replace(tmp, path)
    except OSError as e:
        for left in (tmp, run_dir / (INDEX_NAME + ".tmp"), run_dir / (DIGESTS_NAME + ".tmp")):  # the records' own
            with contextlib.suppress(OSError):
                left.unlink()
        raise RunFailed(f"cannot write checkpoint {path} at step {step}: {e.strerror or e} ({stopped_words(run_dir)}); "
                        "free space and resume with --resume") from None
    return path


def _write_digests(run_dir: Path, entries: list[dict]) -> None:
    """The second record, written atomically: one `SHA256 STEP` line per entry."""
    tmp = run_dir / (DIGESTS_NAME + ".tmp")
    tmp.write_text("".join(f"{e['sha256']} {e['step']}\n" for e in entries), encoding="ascii")
    os.replace(tmp, run_dir / DIGESTS_NAME)


def _recorded(run_dir: Path) -> dict[str, int]:
    """{sha256: step} of the checkpoints either record vouches for."""
    return {e["sha256"]: e["step"] for e in _entries(run_dir)}


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


def read_checkpoint(run_dir: str | Path, map_location="cpu", trust_unverified: bool = False) -> dict | None:
    """The newest checkpoint of `run_dir` that a record vouches for (None when there is no checkpoint).

    With no readable record at all, the checkpoints are unverified: refused, unless
    `trust_unverified`, when the newest one torch can read is loaded with a note.
    """
    run_dir = Path(run_dir)
    candidates = [p for p in (run_dir / CHECKPOINT_NAME, run_dir / PREVIOUS_NAME) if p.is_file()]
    if not candidates:
        return None
    for record in _damaged_records(run_dir):
        note(f"{record} cannot be read (damaged); checking the checkpoints against the other record")
    records = [run_dir / name for name in (INDEX_NAME, DIGESTS_NAME)]
    for record, other in (records, records[::-1]):
        if not record.exists() and other.exists():
            note(f"{record} is missing; checking the checkpoints against {other}")
    recorded = _recorded(run_dir)
    if not recorded:
        return _read_unverified(run_dir, candidates, map_location, trust_unverified)
    for i, path in enumerate(candidates):
        data = path.read_bytes()
        if _sha256(data) not in recorded:
            note(f"{path} does not match the sha256 recorded in {_record_words(run_dir)} (damaged); not used")
            continue
        state = _load(path, data, map_location)
        if i > 0:
            note(f"resuming from the previous checkpoint {path} (step {state['step']})")
        return state
    raise TandemError(f"no checkpoint in {run_dir} matches its recorded sha256 (damaged files); "
                      "start over in a new --out")


def _record_words(run_dir: Path) -> str:
    """The record checked against: the index where it reads, else the second record."""
    return str(run_dir / (INDEX_NAME if _read_index(run_dir) else DIGESTS_NAME))


def _read_unverified(run_dir: Path, candidates: list[Path], map_location, trust: bool) -> dict:
    """No record vouches for any checkpoint: refuse, or (`trust`) load the newest that reads, saying so."""
    why = ("its checksum records cannot be read" if _damaged_records(run_dir)
           else f"it has no checksum record ({INDEX_NAME}, {DIGESTS_NAME}; deleted, or written before checksums)")
    if not trust:
        raise TandemError(f"{candidates[0]} cannot be verified: {why}; resume with --trust-unverified to load it "
                          "anyway, or start over in a new --out")
    for path in candidates:
        try:
            state = _load(path, path.read_bytes(), map_location)
        except TandemError:
            note(f"{path} cannot be read (damaged); trying the previous checkpoint")
            continue
        note(f"loading {path} (step {state['step']}) unverified: {why} (--trust-unverified)")
        return state
    raise TandemError(f"no checkpoint in {run_dir} can be read (damaged files); start over in a new --out")


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
    """Save an HF model + tokenizer directory, with the prompt format it learnt; readers never see a
    half-written one."""
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
        write_prompt_format(tmp, TRAINED_INSTRUCTION)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RunFailed(f"cannot write {out}: {e.strerror or e}; free space and resume with --resume") from None
    if out.exists():
        os.replace(out, old)
    os.replace(tmp, out)
    if old.exists():
        shutil.rmtree(old)
    return out
