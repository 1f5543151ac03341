"""A cached decoder over a Hugging Face Llama-family model, with per-row cache lengths.

The reference engine needs what HF's `generate` cache does not give: any subset of the
batch fed any number of new tokens in one forward, each row at its own cache length.
That is what lets the non-author model skip tokens and catch up later in one
multi-token forward. So this module runs the model's own submodules (embedding,
projections, norms, MLP, rotary embedding, LM head) but does attention and the KV cache
itself, in plain PyTorch.

Cache layout per layer: `[B, H_kv, capacity, head_dim]`; row `b` holds valid entries in
slots `[0, lengths[b])`, its absolute positions. New tokens arrive right-padded; padding
is never written to the cache and never attended to by real tokens.

Supported: qwen3, qwen2, llama, mistral (full attention). Others raise `TandemError`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from tandem.errors import TandemError

SUPPORTED_MODEL_TYPES = ("qwen3", "qwen2", "llama", "mistral")


@dataclass
class KVCache:
    keys: list[torch.Tensor]  # per layer [B, H_kv, capacity, D]
    values: list[torch.Tensor]
    lengths: torch.Tensor  # int64 [B]: tokens ingested per row

    @property
    def capacity(self) -> int:
        return self.keys[0].shape[2]


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [b, L, H, D]; cos/sin: [b, L, D]."""
    cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)
    return x * cos + _rotate_half(x) * sin


class CachedDecoder:
    """Runs one HF causal LM against a `KVCache` it owns the layout of."""

    def __init__(self, model):
        cfg = model.config
        model_type = getattr(cfg, "model_type", None)
        if model_type not in SUPPORTED_MODEL_TYPES:
            raise TandemError(
                f"the reference engine supports {', '.join(SUPPORTED_MODEL_TYPES)} models, not {model_type!r}; "
                "use the vLLM backend for other architectures"
            )
        if getattr(cfg, "use_sliding_window", False):
            raise TandemError("sliding-window attention is not supported by the reference engine; disable it")
        self.model = model
        self.inner = model.model
        self.n_layers = len(self.inner.layers)
        attn = self.inner.layers[0].self_attn
        self.head_dim = attn.head_dim
        self.n_heads = cfg.num_attention_heads
        self.n_kv_heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        self.scaling = attn.scaling
        self.sliding_window = getattr(cfg, "sliding_window", None) if model_type == "mistral" else None
        self.vocab_size = model.get_output_embeddings().out_features

    @property
    def device(self) -> torch.device:
        return self.inner.embed_tokens.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.inner.embed_tokens.weight.dtype

    def new_cache(self, batch: int, capacity: int) -> KVCache:
        if self.sliding_window and capacity > self.sliding_window:
            raise TandemError(
                f"sequences of {capacity} tokens exceed this model's sliding window ({self.sliding_window}); "
                "lower --max-new-tokens or shorten the prompts"
            )
        shape = (batch, self.n_kv_heads, capacity, self.head_dim)
        kw = dict(dtype=self.dtype, device=self.device)
        return KVCache(
            keys=[torch.zeros(shape, **kw) for _ in range(self.n_layers)],
            values=[torch.zeros(shape, **kw) for _ in range(self.n_layers)],
            lengths=torch.zeros(batch, dtype=torch.int64, device=self.device),
        )

    @torch.no_grad()
    def forward(self, cache: KVCache, rows: torch.Tensor, tokens: torch.Tensor, n_new: torch.Tensor) -> torch.Tensor:
        """Append `tokens[i, :n_new[i]]` to row `rows[i]`'s cache; return final hidden states [b, L, H].

        `tokens` is right-padded [b, L]; outputs at padded positions are meaningless. Apply
        `logits` only where logits are needed (a long prefill needs just its last position).
        """
        b, L = tokens.shape
        start = cache.lengths[rows]  # [b]
        offsets = torch.arange(L, device=tokens.device)
        positions = start[:, None] + offsets[None, :]  # [b, L]
        valid = offsets[None, :] < n_new[:, None]  # [b, L]
        if int((start + n_new).max()) > cache.capacity:
            raise RuntimeError("KV cache capacity exceeded (engine sized it too small)")
        write_rows = rows[:, None].expand(b, L)[valid]
        write_pos = positions[valid]
        T = int((start + n_new).max())
        slots = torch.arange(T, device=tokens.device)
        # A query at absolute position p sees every cached slot <= p of its own row.
        attn_mask = (slots[None, None, :] <= positions[:, :, None])[:, None]  # [b, 1, L, T]
        all_rows = b == cache.lengths.numel() and bool((rows == torch.arange(b, device=rows.device)).all())

        h = self.inner.embed_tokens(tokens)
        cos, sin = self.inner.rotary_emb(h, positions)
        for i, layer in enumerate(self.inner.layers):
            attn = layer.self_attn
            x = layer.input_layernorm(h)
            q = attn.q_proj(x).view(b, L, self.n_heads, self.head_dim)
            k = attn.k_proj(x).view(b, L, self.n_kv_heads, self.head_dim)
            v = attn.v_proj(x).view(b, L, self.n_kv_heads, self.head_dim)
            if hasattr(attn, "q_norm"):  # qwen3 normalises q and k per head
                q, k = attn.q_norm(q), attn.k_norm(k)
            q, k = _apply_rope(q, cos, sin), _apply_rope(k, cos, sin)
            cache.keys[i][write_rows, :, write_pos] = k[valid]
            cache.values[i][write_rows, :, write_pos] = v[valid]
            if all_rows:
                K, V = cache.keys[i][:, :, :T], cache.values[i][:, :, :T]
            else:
                K, V = cache.keys[i][rows, :, :T], cache.values[i][rows, :, :T]
            out = F.scaled_dot_product_attention(
                q.transpose(1, 2), K, V, attn_mask=attn_mask, scale=self.scaling, enable_gqa=True
            )
            h = h + attn.o_proj(out.transpose(1, 2).reshape(b, L, self.n_heads * self.head_dim))
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        cache.lengths[rows] = start + n_new
        return self.inner.norm(h)

    @torch.no_grad()
    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.model.lm_head(hidden)
