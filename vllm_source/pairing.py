"""Which juniors can share one vLLM engine (and its attention metadata) with the senior.

Both models run in one engine, on one scheduler's attention metadata: vLLM's attention
backends plan each step once (FlashAttention-3's ahead-of-time schedule and FlashInfer's
plan take the query-head count, KV-head count, head size, sliding window, logit
soft-cap and softmax scale of the model the runner was built for: the senior's). A
junior whose layers would need any other value gets wrong attention or an illegal
memory access on a GPU, so it is refused here, before any weight loads. Depth, width
(hidden size), MLP size and rotary settings may differ: they never reach the metadata.
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


def check_pair(senior_cfg, junior_cfg, junior_path: str) -> None:
    """Refuse a junior that cannot co-write with the senior in one engine (one line naming the difference)."""
    if senior_cfg.vocab_size != junior_cfg.vocab_size:
        raise TandemError(
            f"junior {junior_path} has vocab_size {junior_cfg.vocab_size}, the senior {senior_cfg.vocab_size}; "
            "senior and junior must share one vocabulary"
        )
    for name, read in ATTENTION_GEOMETRY.items():
        senior, junior = read(senior_cfg), read(junior_cfg)
        if senior != junior:
            raise TandemError(
                f"junior {junior_path} has {name}={junior!r}, the senior {senior!r}; one engine plans attention "
                "once for both models, so pick a junior with the senior's attention geometry (e.g. the same family "
                "and size class: Qwen3-4B with Qwen3-4B or Qwen3-8B, not Qwen3-0.6B)"
            )
