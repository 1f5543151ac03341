"""Finite or stop: settings, losses and saved tensors must be finite numbers.

`lr=1e309` reads as `inf` and `lr=nan` as NaN; either trains NaN weights from the first
step, and a float beyond float32's range (3.4e38) overflows in the optimizer. So the
typed configs refuse a non-finite or float32-overflowing number anywhere in them (and a
value that must be positive, like `lr` or `save_every`, that is not), and a learning rate
above `LR_CEILING`, one line naming the key;
the trainer stops at the first step whose loss or gradient norm is not finite, before the
optimizer applies it; and no checkpoint holding a non-finite tensor is written.
"""

from __future__ import annotations

import dataclasses
import math

from tandem.errors import TandemError

# The weights' and the optimizer's dtype's largest value, torch.finfo(torch.float32).max (3.4e38), without
# importing torch: a config, and a command's --help, need none.
FLOAT32_MAX = float.fromhex("0x1.fffffep+127")
# Adam moves every weight by about lr per step, so lr=1e30 turns 1e-2 weights into 1e30
# ones in one step (a run that "succeeds" with garbage); the largest sane value is far below 1.
LR_CEILING = 1.0


def check_finite_numbers(cfg, where: str, prefix: str = "") -> None:
    """Every float of the (nested) dataclass `cfg` is finite; else one error naming its dotted key."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        key = prefix + f.name
        if dataclasses.is_dataclass(value):
            check_finite_numbers(value, where, key + ".")
        elif isinstance(value, float) and not math.isfinite(value):
            why = " (a number beyond 1.8e308 reads as inf)" if math.isinf(value) else ""
            raise TandemError(f"{where}: {key} must be a finite number, got {value}{why}; set a finite value")
        elif isinstance(value, float) and abs(value) > FLOAT32_MAX:
            raise TandemError(f"{where}: {key}={value} overflows float32 (largest {FLOAT32_MAX:.4g}), the dtype it "
                              "is used in; set a smaller value")


def check_lr(lr: float, where: str) -> None:
    """`lr` is at most `LR_CEILING` (checked after `check_finite_numbers` and `check_positive`)."""
    if lr > LR_CEILING:
        raise TandemError(f"{where}: lr must be <= {LR_CEILING:g} (Adam moves each weight by about lr per step), "
                          f"got {lr:g}; set a learning rate such as 1e-4")


def check_positive(cfg, where: str, names: tuple[str, ...]) -> None:
    """Each named setting is > 0."""
    for name in names:
        value = getattr(cfg, name)
        if not value > 0:
            raise TandemError(f"{where}: {name} must be > 0, got {value}")


def check_non_negative(cfg, where: str, names: tuple[str, ...]) -> None:
    """Each named setting is >= 0."""
    for name in names:
        value = getattr(cfg, name)
        if not value >= 0:
            raise TandemError(f"{where}: {name} must be >= 0, got {value}")


class NonFiniteStep(Exception):
    """A step whose loss or gradient norm is not finite; the trainer turns it into one line naming its checkpoint."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


def check_step_finite(loss: float, grad_norm: float) -> None:
    """Raise `NonFiniteStep` when the loss or the gradient norm is NaN or infinite."""
    if not (math.isfinite(loss) and math.isfinite(grad_norm)):
        raise NonFiniteStep(f"loss {loss}, gradient norm {grad_norm}")


def first_non_finite(named: dict[str, object]) -> str | None:
    """The name of the first floating tensor holding NaN or inf in a (nested) state dict, else None."""
    import torch

    for name, value in named.items():
        if isinstance(value, dict):
            inner = first_non_finite({f"{name}.{k}": v for k, v in value.items()})
            if inner is not None:
                return inner
        elif isinstance(value, torch.Tensor) and value.is_floating_point() and not bool(torch.isfinite(value).all()):
            return name
    return None
