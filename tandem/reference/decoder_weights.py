"""Packing HF Llama-family weights for the cached decoder: fused, folded and stacked.

The decoder (`tandem.reference.decoder`) runs one or more models of one architecture in a single
forward, so it wants each weight as a stack `[M, in, out]` over the M models (M = 1 for
one model, 2 for a senior and a junior of identical configs). Packing also cuts the
number of ops per layer, which is what a step costs for small models:

- q, k and v projections are one matrix; gate and up projections are one matrix;
- each RMSNorm weight is folded into the matrix that reads the normalised state
  (`W @ (w * x) == (W * w) @ x`), so a norm is one op without a weight;
- rotary cos/sin come from the model's own rotary module, tabulated once per position.

A pack is a snapshot: the engine re-packs at every `generate`, so a senior that is being
trained is always decoded with its current weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tandem.errors import TandemError

SUPPORTED_MODEL_TYPES = ("qwen3", "qwen2", "llama", "mistral")
# Config keys that do not change what a forward computes; two models that differ only in
# these can share one stacked forward.
_METADATA_KEYS = {
    "_name_or_path", "transformers_version", "architectures", "dtype", "torch_dtype", "_commit_hash",
    "use_cache", "output_attentions", "output_hidden_states", "return_dict", "id2label", "label2id",
    "problem_type", "bos_token_id", "eos_token_id", "pad_token_id", "initializer_range",
    "tie_word_embeddings", "attention_dropout",
}


@dataclass
class LayerWeights:
    qkv: torch.Tensor  # [M, hidden, (H + 2 H_kv) * D], input norm folded in
    qkv_bias: torch.Tensor | None  # [M, 1, (H + 2 H_kv) * D]
    qk_norm: torch.Tensor | None  # [M, 1, H + H_kv, D] (qwen3's per-head q/k norms)
    o: torch.Tensor  # [M, H * D, hidden]
    o_bias: torch.Tensor | None
    gate_up: torch.Tensor  # [M, hidden, 2 * intermediate], post-attention norm folded in
    gate_up_bias: torch.Tensor | None
    down: torch.Tensor  # [M, intermediate, hidden]
    down_bias: torch.Tensor | None


@dataclass
class PackedWeights:
    embed: torch.Tensor  # [M, V, hidden]
    layers: list[LayerWeights]
    lm_head: torch.Tensor  # [M, hidden, V], final norm folded in
    lm_head_bias: torch.Tensor | None


def check_supported(model) -> None:
    cfg = model.config
    model_type = getattr(cfg, "model_type", None)
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise TandemError(
            f"the reference engine supports {', '.join(SUPPORTED_MODEL_TYPES)} models, not {model_type!r}; "
            "use the vLLM backend for other architectures"
        )
    if getattr(cfg, "use_sliding_window", False):
        raise TandemError("sliding-window attention is not supported by the reference engine; disable it")


def same_architecture(a, b) -> bool:
    """Can `a` and `b` run as one stacked forward? (identical configs, dtype and device)"""
    ca = {k: v for k, v in a.config.to_dict().items() if k not in _METADATA_KEYS}
    cb = {k: v for k, v in b.config.to_dict().items() if k not in _METADATA_KEYS}
    pa, pb = next(a.parameters()), next(b.parameters())
    return ca == cb and pa.dtype == pb.dtype and pa.device == pb.device


def _stack(tensors: list[torch.Tensor | None]) -> torch.Tensor | None:
    return None if tensors[0] is None else torch.stack(tensors)


def _bias(*linears) -> torch.Tensor | None:
    if linears[0].bias is None:
        return None
    return torch.cat([lin.bias for lin in linears])[None]


def _pack_layer(layer) -> dict:
    attn, mlp = layer.self_attn, layer.mlp
    qkv = torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight]) * layer.input_layernorm.weight
    gate_up = torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]) * layer.post_attention_layernorm.weight
    qk_norm = None
    if hasattr(attn, "q_norm"):
        n_q = attn.q_proj.out_features // attn.head_dim
        n_k = attn.k_proj.out_features // attn.head_dim
        qk_norm = torch.cat([attn.q_norm.weight.expand(n_q, -1), attn.k_norm.weight.expand(n_k, -1)])[None]
    return dict(
        qkv=qkv.t(), qkv_bias=_bias(attn.q_proj, attn.k_proj, attn.v_proj), qk_norm=qk_norm,
        o=attn.o_proj.weight.t(), o_bias=_bias(attn.o_proj),
        gate_up=gate_up.t(), gate_up_bias=_bias(mlp.gate_proj, mlp.up_proj),
        down=mlp.down_proj.weight.t(), down_bias=_bias(mlp.down_proj),
    )


@torch.no_grad()
def pack(models: list) -> PackedWeights:
    """Stack the weights of `models` (identical architectures) into one `PackedWeights`."""
    inners = [m.model for m in models]
    per_layer = [[_pack_layer(layer) for layer in inner.layers] for inner in inners]
    layers = []
    for i in range(len(inners[0].layers)):
        parts = [p[i] for p in per_layer]
        layers.append(LayerWeights(**{k: _stack([p[k] for p in parts]) for k in parts[0]}))
    heads = [m.lm_head.weight * inner.norm.weight for m, inner in zip(models, inners)]
    return PackedWeights(
        embed=torch.stack([inner.embed_tokens.weight for inner in inners]),
        layers=layers,
        lm_head=torch.stack([h.t() for h in heads]),
        lm_head_bias=_stack([None if m.lm_head.bias is None else m.lm_head.bias[None] for m in models]),
    )


@torch.no_grad()
def rope_tables(model, capacity: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and signed sin `[capacity, D]` from the model's own rotary module.

    The sin table has its first half negated, so rotating `x` is
    `x * cos + roll(x, D/2) * sin` (HF's `rotate_half` without a concatenation).
    """
    inner = model.model
    w = inner.embed_tokens.weight
    positions = torch.arange(capacity, device=w.device)[None]
    cos, sin = inner.rotary_emb(w[:1, None], positions)  # tabulated at once: fine for position-only RoPE types
    cos, sin = cos[0], sin[0].clone()
    sin[:, : sin.shape[-1] // 2] *= -1
    return cos, sin
