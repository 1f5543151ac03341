"""`RunSettings`: where a run computes and where its metrics go, shared by both embedded trainers.

`SFTConfig` and `TrainConfig` inherit these fields, so they stay flat top-level keys
(`device=cuda`, `wandb=true`, `threads=1`), written to and read back from `config.json`
as before, and each default lives here once. `check_run_settings` is their one check.
`tandem_app.train.log_sinks` reads the logging fields; `tandem.models.threads` the thread count.
`DeviceSettings` is their part without the metric sinks, for a run that has none
(`tandem-rlvr distill`'s `DistillConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.models.devices import check_device
from tandem_app.train.finite import check_non_negative
from tandem_app.train.log_sinks import check_logging_keys


@dataclass
class DeviceSettings:
    """The device and CPU threads of one run (`tandem-rlvr sft`, `train` or `distill`)."""

    device: str = "cpu"
    threads: int = 0  # torch CPU threads; 0 = auto: 1 for small models, else torch's default (tandem/models/threads.py)


def check_device_settings(cfg: DeviceSettings, where: str) -> None:
    """A known device and threads >= 0; else one line naming the key (`where: key ...`)."""
    check_device(cfg.device, f"{where}: device")
    check_non_negative(cfg, where, ("threads",))


@dataclass
class RunSettings(DeviceSettings):
    """The device, CPU threads, metric sinks and kept HF checkpoints of one run (`tandem-rlvr sft` or `train`)."""

    wandb: bool = False
    wandb_project: str = "tandem-rlvr"
    wandb_mode: str = "offline"
    metrics_format: str = "flat"  # metrics.jsonl rows: flat {step, name: value} | verl {step, data: {...}}
    tensorboard: bool = False  # also log every step to tensorboard (needs `pip install tensorboard`)
    tensorboard_dir: str = ""  # tensorboard's event files; empty = OUT/tensorboard
    keep_checkpoints: int = 2  # the newest OUT/checkpoint-N/model kept (HF format, one per save_every); 0 = none


def check_run_settings(cfg: RunSettings, where: str) -> None:
    """A known device, threads >= 0, a known metrics_format and keep_checkpoints >= 0; else one line naming the
    key (`where: key ...`)."""
    check_device_settings(cfg, where)
    check_logging_keys(cfg, where)
    check_non_negative(cfg, where, ("keep_checkpoints",))
