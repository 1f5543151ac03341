"""Guard for the parts of the vLLM backend that need vLLM (and CUDA) at run time."""

from __future__ import annotations

from tandem.errors import TandemError

VLLM_MISSING = "the vLLM backend needs CUDA and `pip install tandem-rlvr[vllm]`"
# The vLLM release this backend was written against (verl 0.9.1's [vllm] extra pins it).
TARGET_VLLM = "0.24.0"


def require_vllm(cuda: bool = False):
    """Import and return the `vllm` module, or raise `TandemError` saying how to get it."""
    try:
        import vllm
    except ImportError:
        raise TandemError(f"{VLLM_MISSING} (vllm is not importable here)") from None
    if cuda:
        import torch

        if not torch.cuda.is_available():
            raise TandemError(f"{VLLM_MISSING} (no CUDA device is visible)")
    return vllm
