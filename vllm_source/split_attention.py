"""Which vLLM attention backends can serve a split engine, per vLLM release; the one-line refusal.

Under `placement="split"` each rank builds one whole model (layers unsharded) while vLLM's
parallel config still says tensor-parallel size 2. An attention metadata builder that sizes
per-head state from the model config (`model_config.get_num_attention_heads(parallel_config)`,
total heads / 2) gets half the heads the layers have: wrong kernel plans, or scratch
buffers too small for what the kernel writes. A builder that reads the heads from the
layers of its group (`get_num_attention_heads_from_layers`, vLLM 0.28) sizes correctly.

`compat.HEADS_FROM` records, per release and backend, where the builder reads the query-head
count (file:line in that release's wheel), and `compat.HEAD_SIZE_FROM` where it reads the
head size; this module applies them. On the tested release the scale lane checks
each entry against the installed backend's own source (`tests/test_scale_vllm_split_attention.py`);
the accepted release's entries were read from its wheel. The split model checks the
backend its attention layers were actually given (`check_split_backend`), inside each
worker before any weights load; `split_backend_kwargs` runs in the calling process before
the engine starts: it refuses an explicitly requested backend split cannot use, and where the
caller names none on a GPU it names `compat.SPLIT_DEFAULT_BACKEND` (one log line). Left to
vLLM, an H100 would get FLASH_ATTN (FA3), which sizes the heads from the model config on 0.28.
"""

from __future__ import annotations

import logging

from tandem.errors import TandemError

from vllm_source.compat import (
    CONFIG,
    FLASHINFER_CONFIG_CAPABILITY,
    HEAD_SIZE_FROM,
    HEADS_FROM,
    LAYERS,
    SPLIT_DEFAULT_BACKEND,
    SPLIT_RELEASE,
    minor,
)

logger = logging.getLogger(__name__)


def split_backends(vllm_minor: str) -> list[str]:
    """The backends a split engine may use on this release (they read the heads from the layers)."""
    return sorted(b for b, (source, _) in HEADS_FROM.get(vllm_minor, {}).items() if source == LAYERS)


def check_split_backend(vllm_minor: str, backend: str, capability_major: int | None = None) -> None:
    """Refuse, in one line, a (release, backend) pair that sizes attention from the model config under split."""
    source, where = HEADS_FROM.get(vllm_minor, {}).get(backend, (None, "not read for this release"))
    if source == LAYERS and not (backend == "FLASHINFER" and capability_major == FLASHINFER_CONFIG_CAPABILITY):
        return
    usable = split_backends(vllm_minor)
    fix = (f"set vLLM's attention backend (engine argument attention_backend) to one that reads them from the "
           f"layers: {' or '.join(usable)}"
           if usable else f"use vLLM {SPLIT_RELEASE} (no backend of vLLM {vllm_minor} reads them from the layers)")
    raise TandemError(
        f"placement='split' cannot run vLLM {vllm_minor}'s {backend} attention backend: it sizes the query heads "
        f"from the model config ({where}), half of what each split rank's unsharded layers have; {fix}, "
        "or use placement='shared'"
    )


def requested_backend(engine_kwargs: dict) -> str | None:
    """The backend an engine's keyword arguments ask for (`attention_backend` or `attention_config.backend`), if any.

    vLLM 0.24 and 0.28 take the backend from these engine arguments only (no environment variable).
    """
    config = engine_kwargs.get("attention_config")
    # a dict or an OmegaConf node (verl's engine_kwargs), or vLLM's AttentionConfig
    backend = config.get("backend") if callable(getattr(config, "get", None)) else getattr(config, "backend", None)
    backend = engine_kwargs.get("attention_backend") or backend
    name = getattr(backend, "name", backend)
    return str(name) if name else None


def check_requested_backend(vllm_version: str, engine_kwargs: dict) -> None:
    """Before the engine starts: refuse an explicitly requested backend that split cannot use."""
    backend = requested_backend(engine_kwargs)
    if backend is not None:
        check_split_backend(minor(vllm_version), backend)


def split_default_backend(vllm_minor: str, capability_major: int | None = None) -> str:
    """The backend a split engine on a GPU gets when its caller names none; a one-line refusal where the
    release has none that reads the heads from the layers (0.24: the fix is vLLM 0.28).

    The default does not depend on the capability (Triton is valid on all), but it is checked
    against it where known, as the worker checks the backend it was given.
    """
    check_split_backend(vllm_minor, SPLIT_DEFAULT_BACKEND, capability_major)
    return SPLIT_DEFAULT_BACKEND


def split_backend_kwargs(vllm_version: str, engine_kwargs: dict, on_gpu: bool) -> dict:
    """`engine_kwargs` with the split engine's attention backend settled, before the engine starts.

    A backend the caller names is checked (one-line refusal). Where none is named on a GPU,
    `attention_backend` is set to the default and one log line says which: left to itself vLLM
    would pick its fastest valid backend, FLASH_ATTN on SM 8.x/9.x, which 0.28 refuses under
    split. vLLM's CPU build has one backend (CPU_ATTN, which reads the layers): nothing is set.
    """
    release = minor(vllm_version)
    if requested_backend(engine_kwargs) is not None:
        check_requested_backend(vllm_version, engine_kwargs)
        return engine_kwargs
    if not on_gpu:
        return engine_kwargs
    backend = split_default_backend(release)
    others = [b for b in split_backends(release) if b not in (backend, "CPU_ATTN")]
    logger.warning(
        "placement='split': attention backend %s (it reads each rank's query heads from the rank's own layers on "
        "vLLM %s; vLLM's own pick would be its fastest valid backend, which may size them from the model config)%s",
        backend, release, f"; to use another, name attention_backend={' or '.join(others)}" if others else "",
    )
    return {**engine_kwargs, "attention_backend": backend}


def _next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def check_head_size(vllm_minor: str, backend: str, supported: bool, layer_head_size: int,
                    config_head_size: int | None) -> None:
    """Refuse a rank's head size its backend has no kernel for, or one larger than the config-sized scratch."""
    if not supported:
        raise TandemError(f"vLLM's {backend} attention backend has no kernel for head size {layer_head_size} (a "
                          "split rank's model); pick a junior whose head_dim the backend supports")
    source, where = HEAD_SIZE_FROM.get(vllm_minor, {}).get(backend, (LAYERS, ""))
    if source == CONFIG and config_head_size and _next_pow2(layer_head_size) > _next_pow2(config_head_size):
        raise TandemError(
            f"placement='split' cannot run vLLM {vllm_minor}'s {backend} attention backend with a rank of head size "
            f"{layer_head_size}: it sizes its scratch from the senior's head size {config_head_size} ({where}); "
            "pick a junior whose head size is at most the senior's"
        )


def check_model_backends(model, vllm_version: str, capability_major: int | None,
                         config_head_size: int | None = None) -> None:
    """Check the backend and head size each attention layer of a split rank's model was given (in the worker).

    `config_head_size` is the head size the engine's model config reports (the senior's, on every rank).
    """
    release = minor(vllm_version)
    layers = [m for m in model.modules() if hasattr(m, "attn_backend")]
    for backend in sorted({m.attn_backend.get_name() for m in layers}):
        check_split_backend(release, backend, capability_major)
    for head_size, m in {int(m.head_size): m for m in layers if hasattr(m, "head_size")}.items():
        check_head_size(release, m.attn_backend.get_name(), bool(m.attn_backend.supports_head_size(head_size)),
                        head_size, config_head_size)
