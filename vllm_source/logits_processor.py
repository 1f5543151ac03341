"""`TandemLogitsProcessor`: per-request authorship inside vLLM V1's sampler.

Registered with `LLM(..., logits_processors=[PROCESSOR_CLASS])`. vLLM builds one per
worker process. Each step:

1. `update_state(batch_update)` follows the persistent batch (rows removed, added,
   moved); an added request's key comes from `SamplingParams.extra_args`.
2. `apply(logits)` folds the tokens emitted since the last step into each row's state
   (`tandem.process.authorship.advance`, via `TandemBatchState.catch_up`), then replaces every row
   the junior writes with the junior's logits (left in `handoff.SLOT` by the wrapper
   model). Penalties, temperature, top-k/p and sampling then run on the author's logits.

The processor is not argmax-invariant (it changes which model is sampled), so vLLM runs
it with the other logit-changing processors, before penalties and temperature.
"""

from __future__ import annotations

from vllm_source.runtime import require_vllm

require_vllm()

import torch  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor  # noqa: E402

from vllm_source.batch_state import TandemBatchState  # noqa: E402
from vllm_source.compat import refused_request  # noqa: E402
from vllm_source.engine_config import processor_setup  # noqa: E402
from vllm_source.handoff import SLOT, merge_junior_rows  # noqa: E402
from vllm_source.requests import TandemRequestError, check_tandem_params  # noqa: E402


class TandemLogitsProcessor(LogitsProcessor):
    """Chooses, per batch row, whether the senior or the junior writes the next token."""

    @classmethod
    def validate_params(cls, params: SamplingParams) -> None:
        """Refuse requests the tandem engine cannot honour (the caller gets a VLLMValidationError)."""
        try:
            check_tandem_params(params)
        except TandemRequestError as e:
            raise refused_request(e) from None

    def __init__(self, vllm_config, device: torch.device, is_pin_memory: bool) -> None:
        self.cfg, is_boundary = processor_setup(vllm_config.model_config)
        self.state = TandemBatchState(self.cfg, is_boundary, vllm_config.scheduler_config.max_num_seqs)
        self.device = device
        SLOT.attach(self.state)  # the model reads the batch makeup (dummy run? all solo?) from here

    def is_argmax_invariant(self) -> bool:
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        self.state.update(batch_update)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        junior_logits = SLOT.take(logits.shape[0])
        if logits.shape[0] != self.state.batch_size:
            raise TandemRequestError(
                f"{logits.shape[0]} logit rows for {self.state.batch_size} requests (speculative decoding?)"
            )
        self.state.catch_up()
        if late := self.state.pending_placeholders():
            raise TandemRequestError(f"rows {late}: previous token not yet on the CPU; the next author is undecided")
        return merge_junior_rows(logits, junior_logits, self.state.senior_rows())
