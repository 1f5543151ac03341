"""A `device` setting checked when the config is built, not when the first tensor moves.

torch names a bad device only when a model moves there (`device=` or `device=gpu`: a
`RuntimeError` after the run's folder and config are written), and `cuda` on a machine
without a GPU fails the same way. The trainers' configs and the eval's engine settings
check it first, in one line.
"""

from __future__ import annotations

from tandem.errors import TandemError


def check_device(device: str, name: str = "device") -> None:
    """`device` is one torch can name and this machine has; else one line naming `name` (its key or flag) and the fix."""
    if device == "cpu":  # every config's default: no torch needed to know it (a command's --help builds one)
        return
    import torch

    try:
        kind = torch.device(device).type
    except (RuntimeError, ValueError, TypeError):
        raise TandemError(f"{name}={device!r} is not a torch device; use cpu or cuda (cuda:N)") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise TandemError(f"{name}={device} but torch sees no CUDA GPU here; use cpu")
    if kind not in ("cpu", "cuda"):
        raise TandemError(f"{name}={device} is not supported (cpu or cuda); use cpu")
