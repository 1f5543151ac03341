"""vLLM's own attention-backend selection for a split engine's arguments, on a simulated CUDA GPU.

Shared by the scale lane (vLLM 0.28: tests/test_scale_vllm_split_attention.py) and the V2 lane
(vLLM 0.32: tests/test_scale_vllm_v2_split_backend.py). vLLM's CPU build ships its CUDA
platform's Python code; only the CUDA custom-op library that module imports first is missing,
and is stubbed here. The device's compute capability is simulated; every other step is vLLM's:
the engine config built from the engine arguments `tandem_engine_kwargs` gives on a machine with
two GPUs, then `vllm.v1.attention.selector.get_attn_backend` as each attention layer calls it,
which asks the CUDA platform to validate the named backend for that capability, head size and dtype.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import types

import torch

from tandem.process.config import TandemConfig
from vllm_source.engine_config import tandem_engine_kwargs

CUDA_OPS = "vllm._C_stable_libtorch"  # the CUDA wheel's custom-op library, absent from the CPU build


def split_engine_args(monkeypatch, senior: str, runner: str, **engine_kwargs) -> dict:
    """The engine arguments of a split engine as the calling process builds them on a machine with 2 GPUs."""
    with monkeypatch.context() as mp:
        mp.setattr(torch.cuda, "is_available", lambda: True)
        mp.setattr(torch.cuda, "device_count", lambda: 2)
        return tandem_engine_kwargs(TandemConfig(placement="split"), senior, tandem_runner=runner, **engine_kwargs)


def engine_config(engine_kwargs: dict):
    """The `VllmConfig` vLLM builds from those arguments (on this CPU build: config only, nothing starts)."""
    from vllm.engine.arg_utils import EngineArgs

    from vllm_source.plugin import register

    register()  # the tandem architectures, as vLLM's plugin loader registers them in an engine
    return EngineArgs(**engine_kwargs).create_engine_config()


@contextlib.contextmanager
def simulated_cuda(capability: tuple[int, int]):
    """vLLM's CUDA platform as the current platform, reporting `capability`; everything restored after."""
    import vllm.platforms as platforms
    from vllm.platforms.interface import DeviceCapability
    from vllm.v1.attention import selector

    before = set(sys.modules)
    saved_platform = platforms._current_platform
    sys.modules.setdefault(CUDA_OPS, types.ModuleType(CUDA_OPS))
    try:
        cuda = importlib.import_module("vllm.platforms.cuda").CudaPlatform
        cuda.get_device_capability = classmethod(lambda cls, device_id=0: DeviceCapability(*capability))
        platforms._current_platform = cuda()
        selector._cached_get_attn_backend.cache_clear()
        yield cuda
    finally:
        platforms._current_platform = saved_platform
        selector._cached_get_attn_backend.cache_clear()
        for name in set(sys.modules) - before:  # the CUDA platform module and what it alone imported
            del sys.modules[name]
        if hasattr(platforms, "cuda"):
            delattr(platforms, "cuda")


def selected_backend(vllm_config, capability: tuple[int, int], dtype: torch.dtype) -> str:
    """The backend vLLM gives an attention layer of the senior under `vllm_config` on that GPU (its name)."""
    from vllm.config import set_current_vllm_config
    from vllm.v1.attention.selector import get_attn_backend

    # The selector imports the backend; on this build that import binds the CPU platform, as in the engine.
    model = vllm_config.model_config
    with simulated_cuda(capability), set_current_vllm_config(vllm_config):
        backend = get_attn_backend(model.get_head_size(), dtype, "auto",
                                   num_heads=model.hf_config.num_attention_heads)  # unsharded under split
    return backend.get_name()


def first_choice(capability: tuple[int, int]) -> str:
    """vLLM's own first choice of backend for a decoder with no backend named (its priority list)."""
    from vllm.platforms.interface import DeviceCapability

    with simulated_cuda(capability):
        from vllm.platforms.cuda import _get_backend_priorities

        return _get_backend_priorities(use_mla=False, device_capability=DeviceCapability(*capability))[0].name
