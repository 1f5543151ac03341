"""The `device` key of the trainers' configs: checked when the config is built, not when a model moves.

torch names a bad device only when the first tensor moves there (`device=` or `device=gpu`:
a `RuntimeError` after the folder and the config are written), and `device=cuda` on a
machine without a GPU fails the same way. So the configs check it first, in one line.
"""

from __future__ import annotations

import torch

from tandem.errors import TandemError


def check_device(device: str, where: str) -> None:
    """`device` is one torch can name and this machine has; else one line naming it and the fix."""
    try:
        kind = torch.device(device).type
    except (RuntimeError, ValueError):
        raise TandemError(f"{where}: device={device!r} is not a torch device; use cpu or cuda (cuda:N)") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise TandemError(f"{where}: device={device} but torch sees no CUDA GPU here; use device=cpu")
    if kind not in ("cpu", "cuda"):
        raise TandemError(f"{where}: device={device} is not supported (cpu or cuda); use device=cpu")
