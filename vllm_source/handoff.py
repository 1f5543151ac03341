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
    """Holds the junior's logits of the current step until the logits processor takes them.

    The processor also attaches its batch state here (`attach`), so that the model can
    tell a live step from one of vLLM's dummy runs (memory profiling, warm-up: no rows in
    the batch, the processor does not run, nothing must be left behind) and a step whose
    rows are all solo (the junior's logits are not needed: `ALL_SENIOR` is put instead).
    """

    def __init__(self) -> None:
        self._logits: torch.Tensor | None = None
        self._batch = None  # the processor's TandemBatchState, once one exists in this process

    def attach(self, batch_state) -> None:
        self._batch = batch_state

    def live_rows(self) -> int:
        """Rows of the processor's batch this step (0 before any request: a dummy run)."""
        return 0 if self._batch is None else self._batch.batch_size

    def all_solo(self) -> bool:
        """True when the batch has rows and every one is solo (the senior writes them all)."""
        return self._batch is not None and self._batch.all_solo()

    def put(self, junior_logits: torch.Tensor) -> None:
        self._logits = junior_logits

    def clear(self) -> None:
        self._logits = None

    def take(self, rows: int) -> torch.Tensor:
        """The junior's logits for `rows` batch rows; an error if none (or stale ones) are held."""
        logits, self._logits = self._logits, None
        if logits is None:
            raise TandemError(
                "no junior logits for this step: the engine is not running TandemForCausalLM "
                "(set hf_overrides architectures=['TandemForCausalLM'])"
            )
        if logits is not ALL_SENIOR and logits.shape[0] != rows:
            raise TandemError(f"junior logits have {logits.shape[0]} rows but the batch has {rows}")
        return logits


ALL_SENIOR = torch.empty(0)  # put instead of junior logits when every row of the step is solo
SLOT = JuniorLogitsSlot()  # one per process: a vLLM worker process runs one model


def merge_junior_rows(logits: torch.Tensor, junior_logits: torch.Tensor, senior_rows: torch.Tensor) -> torch.Tensor:
    """Put the junior's logits in every row the junior writes; returns `logits` (modified).

    logits: FloatTensor[B, V], the senior's logits after vLLM's earlier masking steps
    (allowed token ids, bad words, min_tokens, out-of-vocabulary tail); junior_logits:
    [B, V] raw (or `ALL_SENIOR`); senior_rows: BoolTensor[B]. A token masked to -inf for
    the senior stays masked for the junior, so request-level constraints hold whoever writes.
    Masked ops only: no index lists, so no host sync on a device tensor.
    """
    if junior_logits is ALL_SENIOR:
        if not bool(senior_rows.all()):  # senior_rows lives on the CPU (the processor's state)
            raise TandemError("the step was marked all-solo but a row has the junior as its author")
        return logits
    junior = (~senior_rows.to(logits.device, non_blocking=True)).unsqueeze(-1)
    take = junior & ~torch.isneginf(logits)
    return logits.copy_(torch.where(take, junior_logits.to(logits.dtype), logits))
