"""The per-step handoff between the wrapper model and the logits processor.

vLLM runs the model and the sampler in the same worker process, one step after the
other: `TandemForCausalLM.compute_logits` returns the senior's logits (what vLLM samples
from) and leaves the junior's logits here; `TandemLogitsProcessor.apply` takes them and
puts the junior's row in place wherever the junior writes this token (`merge_junior_rows`).

The author can only be decided inside the sampler: under async scheduling the previous
token (whose boundary status decides the next author) reaches the CPU just before
sampling, after `compute_logits` has run.
"""

from __future__ import annotations

import torch

from tandem.errors import TandemError


class JuniorLogitsSlot:
    """Holds the junior's logits of the current step until the logits processor takes them."""

    def __init__(self) -> None:
        self._logits: torch.Tensor | None = None

    def put(self, junior_logits: torch.Tensor) -> None:
        self._logits = junior_logits

    def take(self, rows: int) -> torch.Tensor:
        """The junior's logits for `rows` batch rows; an error if none (or stale ones) are held."""
        logits, self._logits = self._logits, None
        if logits is None:
            raise TandemError(
                "no junior logits for this step: the engine is not running TandemForCausalLM "
                "(set hf_overrides architectures=['TandemForCausalLM'])"
            )
        if logits.shape[0] != rows:
            raise TandemError(f"junior logits have {logits.shape[0]} rows but the batch has {rows}")
        return logits


SLOT = JuniorLogitsSlot()  # one per process: a vLLM worker process runs one model


def merge_junior_rows(logits: torch.Tensor, junior_logits: torch.Tensor, senior_rows: torch.Tensor) -> torch.Tensor:
    """Put the junior's logits in every row the junior writes; returns `logits` (modified).

    logits: FloatTensor[B, V], the senior's logits after vLLM's earlier masking steps
    (allowed token ids, bad words, min_tokens, out-of-vocabulary tail); junior_logits:
    [B, V] raw; senior_rows: BoolTensor[B]. A token masked to -inf for the senior stays
    masked for the junior, so request-level constraints hold whoever writes.
    """
    junior = (~senior_rows.to(logits.device)).nonzero().flatten()
    if junior.numel() == 0:
        return logits
    masked = logits[junior]
    replaced = junior_logits[junior].to(logits.dtype)
    logits[junior] = torch.where(torch.isneginf(masked), masked, replaced)
    return logits
