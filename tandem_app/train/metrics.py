"""Per-step metrics: one console line, one `metrics.jsonl` row, and the optional sinks (wandb, tensorboard).

A row is written in the run's `metrics_format` (`tandem.io.metric_log.metrics_row`): `flat`,
`{"step": s, name: value, ...}`, or `verl`, `{"step": s, "data": {...}}` as verl's `file`
logger writes it; `tandem.io.metric_log.read_metrics` reads either. On resume the file keeps
the rows up to the checkpoint step, in the run's form, and continues after them, so a
resumed run's log reads like an uninterrupted one; a torn last line (a crash mid-write)
is dropped with a note, a bad line anywhere else is an error naming it.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from tqdm.auto import tqdm

from tandem.io.jsonl import write_jsonl
from tandem.io.metric_log import batch_metrics, metrics_row, read_metrics
from tandem.io.run_lock import note
from tandem_app.train.log_sinks import TensorboardSink, WandbSink

METRICS_NAME = "metrics.jsonl"  # a run's metrics log, under its folder


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if math.isfinite(v) else str(v)
    return str(v)


class MetricsLogger:
    """Writes `metrics.jsonl` under the run directory (and to wandb and tensorboard when enabled)."""

    def __init__(
        self,
        path: str | Path,
        resume_step: int | None = None,
        console: bool = True,
        console_keys: tuple[str, ...] | None = None,
        wandb: dict | None = None,
        tensorboard: str | None = None,
        form: str = "flat",
    ):
        self.path, self.console, self.console_keys, self.form = Path(path), console, console_keys, form
        self.path.parent.mkdir(parents=True, exist_ok=True)
        kept = []
        if resume_step is not None and self.path.is_file():
            kept = [(s, m) for s, m in _rows_but_a_torn_tail(self.path) if s <= resume_step]
        write_jsonl(self.path, [metrics_row(s, m, form) for s, m in kept])
        self.last_step = kept[-1][0] if kept else None  # the last step written down
        self._file = self.path.open("a", encoding="utf-8")
        self._sinks = []
        if wandb:
            self._sinks.append(WandbSink(**wandb))
        if tensorboard:
            self._sinks.append(TensorboardSink(tensorboard, resume_step))

    def log(self, step: int, metrics: dict) -> None:
        metrics = batch_metrics(metrics)
        self._file.write(json.dumps(metrics_row(step, metrics, self.form)) + "\n")
        self._file.flush()
        self.last_step = step
        for sink in self._sinks:
            sink.log(step, metrics)
        if self.console:
            keys = self.console_keys or list(metrics)
            tqdm.write(f"step {step:>5} | " + " | ".join(f"{k} {_fmt(metrics[k])}" for k in keys if k in metrics))

    def close(self) -> None:
        self._file.close()
        for sink in self._sinks:
            sink.close()


def _rows_but_a_torn_tail(path: Path) -> list[tuple[int, dict]]:
    """The file's (step, metrics) rows; an unreadable last line (a write a crash cut short) is dropped, with a note."""
    lines = path.read_text(encoding="utf-8").rstrip("\n").split("\n")
    try:
        json.loads(lines[-1] or "{}")
    except json.JSONDecodeError:
        note(f"{path}:{len(lines)}: dropped a torn last line (a write cut short by the crash)")
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(line + "\n" for line in lines[:-1]), encoding="utf-8")
        os.replace(tmp, path)
    return read_metrics(path)
