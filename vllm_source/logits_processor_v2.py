"""`TandemLogitsProcessorV2`: per-request authorship inside the sampler of vLLM's V2 model runner.

The V2 counterpart of `logits_processor.py` (the interface of vLLM 0.31-0.33,
`vllm/v1/worker/gpu/sample/logits_processor/interface.py`). vLLM builds one per worker
process with the runner's request state (`req_states`). Per request and per step:

1. `add_request(slot, params)` (re)starts the slot's state from the request key in
   `SamplingParams.extra_args` (a resumed request's tokens are replayed in step 2); vLLM's
   own requests (kernel warm-up, profiling: no key, never validated) make the slot solo;
2. `apply(logits, ctx)` reads the slots of this step's rows (`ctx.idx_mapping_np`); a step
   without a tandem row returns the senior's logits untouched. Otherwise it folds each
   tandem row's newest token (`ctx.input_ids`, on the device) into the slot's state on the
   device (`TandemSlotState.step`: lengths from `ctx.seq_lens_upper_bound_np` minus the
   host's `prompt_len`), and puts the junior's logits (left in `handoff.SLOT` by the wrapper
   model) in every row the junior writes, by a masked select. Nothing is read back to the
   host: async scheduling keeps the CPU a step ahead of the GPU. Temperature, min-p, top-k/p
   and sampling then run on the author's logits.

Penalties: V2 applies them before this processor (`sample/sampler.py`, the processor
list), so they would reach the senior's logits only; `validate_params` refuses them on
tandem requests (`requests.check_v2_penalties`).

The author is decided here, not in the model, for the reason V1 has: the previous token,
whose boundary status decides the next author, is written by the runner on the device
after the previous step's sampling (`post_update`), so only the sampler sees it under
async scheduling; V2 decides it on the device.
"""

from __future__ import annotations

from vllm_source.runtime import require_vllm

require_vllm()

import numpy as np  # noqa: E402
import torch  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.v1.worker.gpu.sample.logits_processor.interface import LogitsContext, LogitsProcessor  # noqa: E402

from vllm_source.compat import refused_request  # noqa: E402
from vllm_source.engine_config import processor_setup  # noqa: E402
from vllm_source.handoff import SLOT, merge_junior_rows  # noqa: E402
from vllm_source.requests import TandemRequestError, check_tandem_params, check_v2_penalties  # noqa: E402
from vllm_source.slot_state import TandemSlotState  # noqa: E402


class TandemLogitsProcessorV2(LogitsProcessor):
    """Chooses, per row of the step, whether the senior or the junior writes the next token."""

    @classmethod
    def validate_params(cls, params: SamplingParams) -> None:
        """Refuse requests the tandem engine cannot honour (the caller gets a VLLMValidationError)."""
        try:
            check_tandem_params(params)
            check_v2_penalties(params)
        except TandemRequestError as e:
            raise refused_request(e) from None

    def __init__(self, vllm_config, req_states) -> None:
        self.cfg, is_boundary = processor_setup(vllm_config.model_config)
        self.req = req_states  # read only: committed tokens and lengths per slot
        self.state = TandemSlotState(self.cfg, is_boundary, req_states.max_num_reqs,
                                     vllm_config.model_config.max_model_len, req_states.device)
        SLOT.attach(self.state)  # the model tells dummy runs apart by it

    def add_request(self, req_idx: int, sampling_params: SamplingParams) -> bool:
        return self.state.add(req_idx, sampling_params.extra_args, sampling_params.max_tokens)

    def apply_staged_writes(self) -> None:
        self.state.flush()  # the new requests' starts, uploaded before the forward

    def apply(self, logits: torch.Tensor, ctx: LogitsContext) -> torch.Tensor:
        slots = np.asarray(ctx.idx_mapping_np, dtype=np.int64)
        if logits.shape[0] != slots.shape[0]:
            raise TandemRequestError(
                f"{logits.shape[0]} logit rows for {slots.shape[0]} requests (speculative decoding?)"
            )
        if not self.state.any_tandem(slots):  # solo rows and vLLM's own (warm-up, profiling)
            SLOT.clear()  # a dummy forward may have left the junior's logits
            return logits
        seq_lens = np.asarray(ctx.seq_lens_upper_bound_np[: slots.shape[0]], dtype=np.int64)
        output_lens = seq_lens - self.req.prompt_len.np[slots].astype(np.int64)
        senior_rows = self.state.step(slots, output_lens, ctx.input_ids, self._output_span)
        return merge_junior_rows(logits, SLOT.take(logits.shape[0]), senior_rows)

    def _output_span(self, slots: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> torch.Tensor:
        """Output tokens [start, end) of each slot, gathered on the device from `all_token_ids` (left-aligned)."""
        prompt = self.req.prompt_len.np[slots].astype(np.int64)
        width = int((ends - starts).max())
        cols = prompt[:, None] + starts[:, None] + np.arange(width)[None, :]
        cols = np.minimum(cols, self.req.all_token_ids.gpu.shape[1] - 1)  # past a row's end: never read
        to_device = self.state.to_device
        return self.req.all_token_ids.gpu[to_device(slots)[:, None], to_device(cols)]
