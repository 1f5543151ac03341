"""`SFTConfig`: the typed settings of one supervised fine-tuning run (`tandem-rlvr sft`), and their checks.

Apart from the loop (`tandem_app/train/sft.py`) so that reading a config, or `sft --help`,
imports no torch. The device and logging keys are `RunSettings`' (`tandem_app/train/run_settings.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tandem.errors import TandemError
from tandem_app.task import Demonstrations, TaskConfig
from tandem_app.train.finite import check_finite_numbers, check_lr, check_non_negative, check_positive
from tandem_app.train.run_settings import RunSettings, check_run_settings


@dataclass
class _SFTSteps:
    """SFTConfig's own keys that come before the run settings (a base, so the keys keep their order)."""

    model: str = ""  # initial HF model dir (e.g. from `tandem-rlvr build-tiny`)
    out: str = ""  # run directory; the base is written to OUT/model
    seed: int = 0
    steps: int = 600
    batch_size: int = 32
    lr: float = 3e-3
    min_lr_ratio: float = 0.1  # cosine decay ends at lr * min_lr_ratio
    warmup_steps: int = 30
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    n_train_problems: int = 20000
    n_val_problems: int = 200
    val_every: int = 0  # 0 = only at the end
    save_every: int = 200
    log_every: int = 25
    max_new_tokens: int = 160


# The bases' fields come first, the last base's first: the keys read as before (`sft --help`, config.json).
@dataclass
class SFTConfig(RunSettings, _SFTSteps):
    """Supervised fine-tuning of a (tiny) model on worked solutions."""

    task: TaskConfig = field(default_factory=TaskConfig)
    demos: Demonstrations = field(default_factory=Demonstrations)  # how the worked solutions are written

    def __post_init__(self):
        check_finite_numbers(self, "sft")
        for name in ("steps", "batch_size", "n_train_problems", "n_val_problems", "save_every", "log_every",
                     "max_new_tokens"):
            if getattr(self, name) < 1:
                raise TandemError(f"sft: {name} must be >= 1, got {getattr(self, name)}")
        check_positive(self, "sft", ("lr", "grad_clip"))
        check_lr(self.lr, "sft")
        check_run_settings(self, "sft")
        check_non_negative(self, "sft", ("min_lr_ratio", "warmup_steps", "weight_decay", "val_every"))
