"""How the tandem config reaches vLLM's processes, and how an engine is configured.

The config travels inside the model config: `hf_overrides={"architectures":
["TandemForCausalLM"], "tandem": {...}}` sets `hf_config.tandem`, and vLLM ships the
model config to every worker process. (The legacy `VLLM_TANDEM_CONFIG` environment
variable is accepted when `hf_config.tandem` is absent.) Everything here is pure, so
the CPU tests cover it; nothing imports vLLM.
"""

from __future__ import annotations

import torch

from tandem.process.boundaries import config_boundary_lookup
from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from vllm_source.placement import architecture, split_engine_kwargs

ARCHITECTURE = "TandemForCausalLM"
MODEL_CLASS = "vllm_source.model:TandemForCausalLM"
PROCESSOR_CLASS = "vllm_source.logits_processor:TandemLogitsProcessor"  # vLLM's V1 model runner
PROCESSOR_CLASS_V2 = "vllm_source.logits_processor_v2:TandemLogitsProcessorV2"  # its V2 runner
PROCESSORS = {"v1": PROCESSOR_CLASS, "v2": PROCESSOR_CLASS_V2}
HF_KEY = "tandem"  # attribute of hf_config holding the tandem config dict

# Engine settings the backend cannot honour: key -> (the harmless values, what it is).
_REFUSED = {
    "speculative_config": ((None, {}), "speculative decoding (vLLM disables custom logits processors with it)"),
    "pipeline_parallel_size": ((None, 1), "pipeline parallelism"),
    "enable_lora": ((None, False), "LoRA adapters"),
}


def tandem_engine_kwargs(cfg: TandemConfig, senior_model: str, tandem_runner: str = "v1", **engine_kwargs) -> dict:
    """Keyword arguments for `vllm.LLM` / `AsyncEngineArgs` that turn an engine into a tandem engine.

    `tandem_runner` is the model runner the engine will decode on ('v1' or 'v2', as
    `vllm_source.model_runner.pin_runner` chose): it picks the logits processor's interface.

    The junior is `cfg.junior_model`, or the senior's own checkpoint when unset (the
    paper's self-paired junior). Eager mode is the default; what CUDA-graph capture of the
    two-model wrapper has run on, and where, is model_spec/SCALE.md's to say.
    """
    for key, (harmless, what) in _REFUSED.items():
        value = engine_kwargs.get(key)
        if not any(type(value) is type(h) and value == h for h in harmless):  # True must not pass as 1
            raise TandemError(f"the tandem vLLM backend does not support {what} ({key}={engine_kwargs[key]!r})")
    if engine_kwargs.get("load_format") == "dummy":
        raise TandemError("load_format='dummy' would leave the junior's weights random; use 'auto'")
    for key in ("hf_overrides", "logits_processors"):
        if engine_kwargs.get(key):
            raise TandemError(f"{key} is set by the tandem backend; do not pass it yourself")
    if tandem_runner not in PROCESSORS:
        raise TandemError(f"tandem_runner must be one of {', '.join(PROCESSORS)}, got {tandem_runner!r}")
    if cfg.placement == "split":  # senior on tensor-parallel rank 0, junior on rank 1 (vllm_source/split.py)
        engine_kwargs = split_engine_kwargs(engine_kwargs)
    tandem = cfg.to_dict()
    tandem["junior_model"] = cfg.junior_model or senior_model
    return {
        "model": senior_model,
        "hf_overrides": {"architectures": [architecture(cfg)], HF_KEY: tandem},
        "logits_processors": [PROCESSORS[tandem_runner]],
        "enforce_eager": True,
        **engine_kwargs,
    }


def tandem_config_from_hf(hf_config) -> TandemConfig:
    """The TandemConfig an engine was built with: `hf_config.tandem`, else `$VLLM_TANDEM_CONFIG`."""
    raw = getattr(hf_config, HF_KEY, None)
    if raw is not None:
        return TandemConfig.from_dict(dict(raw))
    cfg = TandemConfig.from_env()
    if cfg is None:
        raise TandemError(
            "this vLLM engine has no tandem config: pass hf_overrides={'tandem': {...}} "
            "(see vllm_source.engine_config.tandem_engine_kwargs) or set $VLLM_TANDEM_CONFIG"
        )
    return cfg


def processor_boundary_lookup(cfg: TandemConfig, tokenizer_path: str, vocab_size: int, trust_remote_code=False):
    """The boundary lookup (BoolTensor[vocab_size] or None) the engine's processor uses.

    Derived from the same tokenizer files the trainer's replay uses, so both agree.
    """
    tokenizer = None
    if cfg.needs_boundaries and cfg.explicit_boundary_ids() is None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(tokenizer_path, trust_remote_code=trust_remote_code)
    return config_boundary_lookup(cfg, tokenizer, vocab_size, device=torch.device("cpu"))


def processor_setup(model_config) -> tuple[TandemConfig, torch.Tensor | None]:
    """The tandem config and boundary lookup a logits processor (either runner's) is built with."""
    cfg = tandem_config_from_hf(model_config.hf_config)
    is_boundary = processor_boundary_lookup(
        cfg, model_config.tokenizer, model_config.get_vocab_size(), model_config.trust_remote_code
    )
    return cfg, is_boundary
