"""Per-step metrics: one console line, one JSONL row, and optionally a wandb log.

wandb is imported only when enabled and runs offline unless told otherwise. On resume
the JSONL file keeps the rows up to the checkpoint step and continues after them, so a
resumed run's log reads like an uninterrupted one; a torn last line (a crash mid-write)
is dropped with a note, a bad line anywhere else is an error naming it.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from tqdm.auto import tqdm

from tandem.errors import TandemError
from tandem.config_files import config_to_dict
from tandem.jsonl import read_jsonl, write_jsonl
from tandem.run_lock import note

METRICS_NAME = "metrics.jsonl"  # a run's metrics log, under its folder


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if math.isfinite(v) else str(v)
    return str(v)


def wandb_settings(cfg, run_dir, name: str) -> dict | None:
    """The `wandb=` argument of `MetricsLogger` for a config with wandb fields, or None when off."""
    if not cfg.wandb:
        return None
    return dict(project=cfg.wandb_project, run_dir=str(run_dir), config=config_to_dict(cfg),
                mode=cfg.wandb_mode, name=name)


class MetricsLogger:
    """Writes `metrics.jsonl` under the run directory (and to wandb when enabled)."""

    def __init__(
        self,
        path: str | Path,
        resume_step: int | None = None,
        console: bool = True,
        console_keys: tuple[str, ...] | None = None,
        wandb: dict | None = None,
    ):
        self.path, self.console, self.console_keys = Path(path), console, console_keys
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rows = []
        if resume_step is not None and self.path.is_file():
            rows = [r for r in _rows_but_a_torn_tail(self.path) if r.get("step", 0) <= resume_step]
        write_jsonl(self.path, rows)
        self.last_step = rows[-1].get("step") if rows else None  # the last step written down
        self._file = self.path.open("a", encoding="utf-8")
        self._wandb = _start_wandb(**wandb) if wandb else None

    def log(self, step: int, metrics: dict) -> None:
        row = {"step": step, **{k: (float(v) if hasattr(v, "item") else v) for k, v in metrics.items()}}
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()
        self.last_step = step
        if self._wandb is not None:
            self._wandb.log(row, step=step)
        if self.console:
            keys = self.console_keys or [k for k in row if k != "step"]
            tqdm.write(f"step {step:>5} | " + " | ".join(f"{k} {_fmt(row[k])}" for k in keys if k in row))

    def close(self) -> None:
        self._file.close()
        if self._wandb is not None:
            self._wandb.finish()


def _rows_but_a_torn_tail(path: Path) -> list[dict]:
    """The file's rows; an unreadable last line (a write a crash cut short) is dropped with a note."""
    lines = path.read_text(encoding="utf-8").rstrip("\n").split("\n")
    try:
        json.loads(lines[-1] or "{}")
    except json.JSONDecodeError:
        note(f"{path}:{len(lines)}: dropped a torn last line (a write cut short by the crash)")
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(line + "\n" for line in lines[:-1]), encoding="utf-8")
        os.replace(tmp, path)
    return read_jsonl(path)


def _start_wandb(project: str, run_dir: str, config: dict, mode: str = "offline", name: str | None = None):
    try:
        import wandb
    except ImportError:
        raise TandemError(
            "wandb logging is on but wandb is not installed; `pip install wandb` or set wandb=false"
        ) from None
    os.environ.setdefault("WANDB_SILENT", "true")
    return wandb.init(project=project, dir=run_dir, config=config, mode=mode, name=name, reinit=True)
