"""The learning-rate schedule both embedded trainers (SFT and GRPO/TRL) step by."""

from __future__ import annotations

import math


def lr_at(step: int, lr: float, warmup: int, total: int, min_ratio: float) -> float:
    """Linear warm-up over `warmup` steps, then cosine decay to lr * min_ratio at step `total`."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return lr * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))
