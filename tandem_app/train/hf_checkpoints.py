"""Loadable mid-run models: `OUT/checkpoint-N/model`, the last `keep_checkpoints` of them.

`checkpoint.pt` (`tandem_app.train.checkpoint`) is what a run resumes from; it is not a model
any tool loads. So at every save the embedded trainers also write the senior in HF format,
as Hugging Face TRL's `checkpoint-N` and verl's `global_step_N` do: a run can be evaluated
while it runs and after Ctrl-C (`tandem-rlvr eval-solo --model OUT/checkpoint-N/model`).

Atomic for readers: the folder is written whole as `checkpoint-N.tmp` and renamed, so a
`checkpoint-N` that exists is complete. The oldest beyond `keep` are removed after the new
one is in place (renamed to `.old` first, so no reader sees a half-deleted model).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from tandem_app.train.checkpoint import save_pretrained_atomic

PREFIX = "checkpoint-"
_NAME = re.compile(r"^checkpoint-(\d+)$")


def hf_checkpoints(run_dir: str | Path) -> list[tuple[int, Path]]:
    """(step, folder) of each finished `checkpoint-N` in `run_dir`, oldest first."""
    run_dir = Path(run_dir)
    found = [(int(m.group(1)), p) for p in run_dir.glob(PREFIX + "*") if (m := _NAME.match(p.name)) and p.is_dir()]
    return sorted(found)


def save_hf_checkpoint(model, tokenizer, run_dir: str | Path, step: int, keep: int) -> Path | None:
    """Write `run_dir/checkpoint-{step}/model` (see the module docstring) and keep the newest `keep`;
    None (and nothing written) when `keep` is 0."""
    if keep < 1:
        return None
    run_dir = Path(run_dir)
    final, tmp = run_dir / f"{PREFIX}{step}", run_dir / f"{PREFIX}{step}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)  # a save interrupted before its rename
    save_pretrained_atomic(model, tokenizer, tmp / "model")
    if final.exists():  # the same step again (a resumed run that lost the checkpoint.pt after it)
        shutil.rmtree(final)
    os.replace(tmp, final)
    for _, old in hf_checkpoints(run_dir)[:-keep]:
        gone = old.with_name(old.name + ".old")
        os.replace(old, gone)
        shutil.rmtree(gone, ignore_errors=True)
    return final / "model"
