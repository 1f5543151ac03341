"""Atomic checkpoints and bit-for-bit resume.

A checkpoint holds the model and optimizer state, every RNG state the loop touches, the
step count and, for a junior that follows the senior (`tandem.junior_update`), the junior. It is written to a temporary file and moved over the old one with
`os.replace`, so a crash mid-write never leaves a torn checkpoint. Batches are a pure
function of (seed, step) (`data.batch_indices`) and sampling uses counter-based
uniforms keyed per request, so restoring this state continues the run exactly.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import torch

from tandem.errors import TandemError
from tandem.jsonl import write_json
from tandem.config_files import config_diff

CHECKPOINT_NAME = "checkpoint.pt"


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


def save_checkpoint(run_dir: str | Path, model, optimizer, step: int, extra: dict | None = None,
                    junior=None) -> Path:
    """Write `run_dir/checkpoint.pt` atomically (with `junior`'s weights when given); return its path."""
    path = Path(run_dir) / CHECKPOINT_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": rng_state(),
        "extra": extra or {},
    }
    if junior is not None:
        state["junior"] = junior.state_dict()
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(run_dir: str | Path, model, optimizer, map_location="cpu", junior=None) -> tuple[int, dict]:
    """Restore model, optimizer, RNG (and `junior`'s) states from `run_dir/checkpoint.pt`; return (step, extra)."""
    path = Path(run_dir) / CHECKPOINT_NAME
    if not path.is_file():
        raise TandemError(f"--resume: no checkpoint at {path}; start without --resume or point --out at the run")
    try:
        state = torch.load(path, map_location=map_location, weights_only=False)
    except Exception as e:  # a truncated or foreign file
        raise TandemError(f"checkpoint {path} cannot be read ({type(e).__name__}); delete it and restart") from None
    if junior is not None and "junior" not in state:
        raise TandemError(f"checkpoint {path} holds no junior, but this run's junior follows the senior "
                          "(tandem.junior_update); resume with the config the run was started with")
    model.load_state_dict(state["model"])
    if junior is not None:
        junior.load_state_dict(state["junior"])
    optimizer.load_state_dict(state["optimizer"])
    set_rng_state(state["rng"])
    return int(state["step"]), state.get("extra", {})


def has_checkpoint(run_dir: str | Path) -> bool:
    return (Path(run_dir) / CHECKPOINT_NAME).is_file()


def save_pretrained_atomic(model, tokenizer, out: str | Path) -> Path:
    """Save an HF model + tokenizer directory; readers never see a half-written one."""
    out = Path(out)
    tmp, old = out.with_name(out.name + ".tmp"), out.with_name(out.name + ".old")
    for p in (tmp, old):
        if p.exists():
            shutil.rmtree(p)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if out.exists():
        os.replace(out, old)
    os.replace(tmp, out)
    if old.exists():
        shutil.rmtree(old)
    return out


def check_run_dir(out: Path, cfg_dict: dict, resume: bool) -> None:
    """Refuse to overwrite a run or to resume one under a different config (steps may grow)."""
    saved = out / "config.json"
    if resume and saved.is_file():
        diff = [k for k in config_diff(json.loads(saved.read_text()), cfg_dict) if k not in ("steps", "out")]
        if diff:
            raise TandemError(
                f"--resume with a different config ({', '.join(diff)}); use the run's config or a new --out"
            )
    elif not resume and out.exists() and any(out.iterdir()):
        raise TandemError(f"{out} is not empty; pass --resume to continue that run or choose a new --out")
    write_json(saved, cfg_dict)
