"""Where a run's metrics go besides `metrics.jsonl`: wandb and tensorboard, each imported only when on.

Both embedded trainers (SFT and GRPO/TRL) name them in their config, the way verl's
`trainer.logger` and TRL's `report_to` do: `wandb=true` (offline unless `wandb_mode` says
otherwise) and `tensorboard=true` (event files under `tensorboard_dir`, by default
`OUT/tensorboard`, through `torch.utils.tensorboard`). A sink whose package is missing
stops the run with one line naming the `pip install`, before the run's folder is made
(`check_sinks`, which both trainers call first).
"""

from __future__ import annotations

import os
from pathlib import Path

from tandem.io.config_files import config_to_dict
from tandem.errors import TandemError
from tandem.io.metric_log import ROW_FORMS

TENSORBOARD_DIR = "tensorboard"  # under the run's folder, unless tensorboard_dir names another


def check_logging_keys(cfg, where: str) -> None:
    """A known `metrics_format`; else one error naming the choices."""
    if cfg.metrics_format not in ROW_FORMS:
        raise TandemError(f"{where}: unknown metrics_format {cfg.metrics_format!r}; "
                          f"choose one of {', '.join(ROW_FORMS)}")


def check_sinks(cfg) -> None:
    """Import the package of every sink `cfg` turns on, so that a missing one refuses the run before its folder
    exists (else `config.json` and an empty `metrics.jsonl` would stay and the retry be refused as not empty)."""
    if cfg.wandb:
        _wandb()
    if cfg.tensorboard:
        _summary_writer()


def _wandb():
    try:
        import wandb
    except ImportError:
        raise TandemError("wandb logging is on but wandb is not installed; `pip install wandb` or set wandb=false"
                          ) from None
    return wandb


def _summary_writer():
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise TandemError("tensorboard logging is on but tensorboard is not installed; `pip install tensorboard` "
                          "or set tensorboard=false") from None
    return SummaryWriter


def logger_settings(cfg, run_dir, name: str) -> dict:
    """`MetricsLogger`'s keyword arguments for a config with the logging keys (row form, wandb, tensorboard)."""
    return dict(form=cfg.metrics_format, wandb=wandb_settings(cfg, run_dir, name),
                tensorboard=tensorboard_dir(cfg, run_dir))


def wandb_settings(cfg, run_dir, name: str) -> dict | None:
    """The `wandb=` argument of `MetricsLogger` for a config with wandb fields, or None when off."""
    if not cfg.wandb:
        return None
    return dict(project=cfg.wandb_project, run_dir=str(run_dir), config=config_to_dict(cfg),
                mode=cfg.wandb_mode, name=name)


def tensorboard_dir(cfg, run_dir) -> str | None:
    """The folder of the run's tensorboard event files, or None when tensorboard is off."""
    if not cfg.tensorboard:
        return None
    return cfg.tensorboard_dir or str(Path(run_dir) / TENSORBOARD_DIR)


class WandbSink:
    """One wandb run; each step's metrics are one `log` call at that step."""

    def __init__(self, project: str, run_dir: str, config: dict, mode: str = "offline", name: str | None = None):
        wandb = _wandb()
        os.environ.setdefault("WANDB_SILENT", "true")
        self._run = wandb.init(project=project, dir=run_dir, config=config, mode=mode, name=name, reinit=True)

    def log(self, step: int, metrics: dict) -> None:
        self._run.log({"step": step, **metrics}, step=step)

    def close(self) -> None:
        self._run.finish()


class TensorboardSink:
    """A `SummaryWriter` on `log_dir`: one scalar per numeric metric and step, flushed each step.

    `resume_step` (a resumed run) purges the events that an earlier launch wrote after that
    step, so the curves continue from the checkpoint the way `metrics.jsonl` does.
    """

    def __init__(self, log_dir: str, resume_step: int | None = None):
        purge = None if resume_step is None else resume_step + 1
        self._writer = _summary_writer()(log_dir=log_dir, purge_step=purge)

    def log(self, step: int, metrics: dict) -> None:
        for name, value in metrics.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self._writer.add_scalar(name, value, global_step=step)
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
