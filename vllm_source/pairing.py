"""Which juniors can share one vLLM engine with the senior, per placement; the junior's context.

`placement="shared"`: both models run on every rank, on one attention plan per step
(FlashAttention-3's ahead-of-time schedule and FlashInfer's plan take the query-head
count, KV-head count, head size, sliding window, logit soft-cap and softmax scale of the
model the runner was built for: the senior's). A junior whose layers would need any other
value gets wrong attention or an illegal memory access on a GPU, so it is refused here,
before any weight loads, pointing at split.

`placement="split"`: each rank builds its own model and plans attention for its own layers.
vLLM 0.28 merges the two ranks' KV-cache specs by layer name into one block table (one
`FullAttentionSpec` group where the geometries agree, one `UniformTypeKVCacheSpecs` group
with per-layer page sizes where they differ: `v1/core/kv_cache_utils.py:2120-2130,
1762-1771`), so query heads, KV heads and head size may differ; what must agree is the
tokens per block, which one attention backend on both ranks gives. Which backends read
the head size from the layers is `split_attention.py`'s table. Sliding windows, layer
types, soft-cap and softmax scale must still match (a window would add KV-cache groups).

Depth, width (hidden size), MLP size and rotary settings may differ under both placements.
The junior's context (`junior_context`) bounds the engine's `max_model_len`: vLLM derives
it from the senior alone and would run past the junior's rotary table silently.
Pure (no vLLM), so the main suite tests it.
"""

from __future__ import annotations

from tandem.errors import TandemError


def _head_dim(cfg) -> int | None:
    explicit = getattr(cfg, "head_dim", None)
    if explicit:
        return int(explicit)
    heads, hidden = getattr(cfg, "num_attention_heads", None), getattr(cfg, "hidden_size", None)
    return hidden // heads if heads and hidden else None


def _sliding_window(cfg):
    """The window vLLM applies, or None (Qwen2/3 carry a window that `use_sliding_window` switches off)."""
    if getattr(cfg, "use_sliding_window", True) is False:
        return None
    return getattr(cfg, "sliding_window", None)


def _layer_kinds(cfg):
    """The set of per-layer attention kinds (full / sliding), where the config lists them."""
    kinds = getattr(cfg, "layer_types", None)
    if _sliding_window(cfg) is None and kinds is not None:
        kinds = [k for k in kinds if k != "sliding_attention"] or ["full_attention"]
    return None if kinds is None else sorted(set(kinds))


# name shown in the error -> how it is read from an HF config
ATTENTION_GEOMETRY = {
    "num_attention_heads": lambda c: getattr(c, "num_attention_heads", None),
    "num_key_value_heads": lambda c: getattr(c, "num_key_value_heads", None) or getattr(c, "num_attention_heads", None),
    "head_dim": _head_dim,
    "sliding_window": _sliding_window,
    "layer_types": _layer_kinds,
    "attn_logit_softcapping": lambda c: getattr(c, "attn_logit_softcapping", None),
    "query_pre_attn_scalar": lambda c: getattr(c, "query_pre_attn_scalar", None),
}


# What each rank of a split engine plans for its own model (see the module docstring).
PER_RANK_UNDER_SPLIT = ("num_attention_heads", "num_key_value_heads", "head_dim")
# HF config keys vLLM reads a model's context from (config/model.py, _get_and_verify_max_len).
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                "max_sequence_length", "max_seq_length", "seq_len")


def junior_context(cfg) -> int | None:
    """The junior's context in tokens: the smallest context key of its HF config, times a rope scaling factor."""
    values = [int(v) for v in (getattr(cfg, k, None) for k in CONTEXT_KEYS) if isinstance(v, int) and v > 0]
    if not values:
        return None
    rope = getattr(cfg, "rope_scaling", None) or getattr(cfg, "rope_parameters", None) or {}
    factor = rope.get("factor") if isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) not in (
        None, "default", "mrope") else None
    if factor and rope.get("original_max_position_embeddings"):
        return int(rope["original_max_position_embeddings"] * factor)
    return int(min(values) * factor) if factor else min(values)


def check_context(max_model_len: int | None, junior_cfg, junior_path: str) -> None:
    """Refuse an engine whose max_model_len is longer than the junior's context."""
    context = junior_context(junior_cfg)
    if max_model_len and context and max_model_len > context:
        raise TandemError(f"junior {junior_path} has a context of {context} tokens but the engine's max_model_len is "
                          f"{max_model_len}; set max_model_len <= {context}")


def check_pair(senior_cfg, junior_cfg, junior_path: str, placement: str = "shared") -> None:
    """Refuse a junior that cannot co-write with the senior under `placement` (one line naming the difference)."""
    if senior_cfg.vocab_size != junior_cfg.vocab_size:
        raise TandemError(
            f"junior {junior_path} has vocab_size {junior_cfg.vocab_size}, the senior {senior_cfg.vocab_size}; "
            "senior and junior must share one vocabulary"
        )
    for name, read in ATTENTION_GEOMETRY.items():
        if placement == "split" and name in PER_RANK_UNDER_SPLIT:
            continue
        senior, junior = read(senior_cfg), read(junior_cfg)
        if senior == junior:
            continue
        if placement == "split":
            raise TandemError(f"junior {junior_path} has {name}={junior!r}, the senior {senior!r}; under "
                              "placement='split' the two models may differ in heads and head size, not in this")
        per_rank = " (or use placement='split', where each rank plans attention for its own model)" \
            if name in PER_RANK_UNDER_SPLIT else ""
        raise TandemError(
            f"junior {junior_path} has {name}={junior!r}, the senior {senior!r}; placement='shared' plans attention "
            "once for both models, so pick a junior with the senior's attention geometry (e.g. the same family "
            f"and size class: Qwen3-4B with Qwen3-4B or Qwen3-8B, not Qwen3-0.6B){per_rank}"
        )
