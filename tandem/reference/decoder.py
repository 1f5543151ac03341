"""A cached decoder over Hugging Face Llama-family models, with per-row cache lengths.

The reference engine needs what HF's `generate` cache does not give: any subset of the
batch fed any number of new tokens in one forward, each row at its own cache length.
That is what lets the non-author model skip tokens and catch up later in one
multi-token forward. So this module runs the models' weights (packed by
`tandem.reference.decoder_weights`) with its own attention and KV cache, in plain PyTorch.

One decoder runs M models of one architecture at once: M = 1 normally, M = 2 is the
*paired* decoder of a senior and a junior with identical configs, fed the same rows and
tokens (lockstep decoding). Every matrix is a stack `[M, in, out]` and every matmul a
`bmm` over the model dimension, so a step of both models launches as many ops as a step
of one. That pays where per-op overhead dominates (small models, small batches). It
does not remove the second model's arithmetic, nor its weight and KV-cache memory
traffic: where those dominate (large batches or long contexts here; a bandwidth-bound
GPU generally) a paired step still costs about two solo steps.

Cache layout per layer: values `[M, B, H_kv, capacity, head_dim]`, keys the same with the
last two dimensions swapped (a plain matmul for the scores, ~30% faster on CPU than a
transposed view); row `b` holds valid entries in slots `[0, lengths[b])`, its absolute
positions. New tokens are packed (padding is never computed); only attention
sees a `[rows, L]` layout, and padded queries are never written to the cache.

`begin` snapshots the weights for one generation; a decoder serves one generation at a
time. Norms run in float32 as HF's RMSNorm does (float64 models match HF to ~1e-12).
Supported: qwen3, qwen2, llama, mistral (full attention).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from tandem.reference.decoder_weights import check_supported, pack, rope_tables, same_architecture
from tandem.errors import TandemError


@dataclass
class KVCache:
    keys: list[torch.Tensor]  # per layer [M, B, H_kv, D, capacity]: transposed, for q @ K^T
    values: list[torch.Tensor]  # per layer [M, B, H_kv, capacity, D]
    lengths: torch.Tensor  # int64 [B]: tokens ingested per row (the same for all M models)

    @property
    def capacity(self) -> int:
        return self.values[0].shape[3]

    def keep_rows(self, keep: torch.Tensor) -> None:
        """Drop every row not in `keep` (finished rows leave the batch)."""
        self.keys = [k[:, keep] for k in self.keys]
        self.values = [v[:, keep] for v in self.values]
        self.lengths = self.lengths[keep]


@dataclass
class _Group:
    """Tokens of one forward that share an attention layout [b rows, L query positions]."""

    tokens: torch.Tensor | None  # indices into the forward's N new tokens (None: all, in order)
    rows: torch.Tensor | None  # cache rows attended over (None: every row, no K/V copy)
    b: int
    L: int
    scatter: tuple | None  # (row, offset) of each token in [b, L] (None: tokens already fill it)
    bias: torch.Tensor | None  # [M * b * H_kv, G * L, T] additive attention mask (None: none needed)


@dataclass
class _Layout:
    """Where one forward's N new tokens go, and their attention groups."""

    write_rows: torch.Tensor  # [N] cache row of each new token
    write_pos: torch.Tensor  # [N] its absolute position (cache slot)
    valid: torch.Tensor | None  # [b, L] which padded entries are tokens (None: no padding)
    end: torch.Tensor  # [b] cache lengths after the forward
    T: int  # cache slots attended to
    groups: list[_Group]
    cos: torch.Tensor  # [N, 1, D] rotary tables at the tokens' positions
    sin: torch.Tensor


def _norm(x: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm without a weight (folded into the next matrix), computed in float32 like HF's."""
    if x.dtype == torch.float32:
        return F.rms_norm(x, (x.shape[-1],), None, eps)
    return F.rms_norm(x.float(), (x.shape[-1],), None, eps).to(x.dtype)


def _linear(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, residual=None) -> torch.Tensor:
    """`x @ w (+ bias) (+ residual)` over the model dimension: x [M, n, in], w [M, in, out]."""
    if residual is not None:
        out = torch.baddbmm(residual, x, w)
    else:
        out = torch.bmm(x, w)
    return out if bias is None else out + bias


class CachedDecoder:
    """Runs `models` (one, or several of one architecture) against a `KVCache` it owns."""

    def __init__(self, *models):
        for m in models:
            check_supported(m)
        if any(not same_architecture(models[0], m) for m in models[1:]):
            raise TandemError("a paired decoder needs models of identical configs, dtypes and devices")
        self.models = models
        self.M = len(models)
        cfg = models[0].config
        attn = models[0].model.layers[0].self_attn
        self.n_layers = len(models[0].model.layers)
        self.head_dim = attn.head_dim
        self.n_heads = cfg.num_attention_heads
        self.n_kv_heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        self.scaling = attn.scaling
        self.eps = models[0].model.norm.variance_epsilon
        self.sliding_window = getattr(cfg, "sliding_window", None) if cfg.model_type == "mistral" else None
        self.vocab_size = models[0].get_output_embeddings().out_features
        self.act = F.silu if cfg.hidden_act == "silu" else models[0].model.layers[0].mlp.act_fn
        self.w = None

    @property
    def device(self) -> torch.device:
        return self.models[0].model.embed_tokens.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.models[0].model.embed_tokens.weight.dtype

    def begin(self, batch: int, capacity: int) -> KVCache:
        """Start a generation: snapshot the current weights and return an empty cache."""
        if self.sliding_window and capacity > self.sliding_window:
            raise TandemError(
                f"sequences of {capacity} tokens exceed this model's sliding window ({self.sliding_window}); "
                "lower --max-new-tokens or shorten the prompts"
            )
        self.w = pack(self.models)
        self.cos, self.sin = rope_tables(self.models[0], capacity)
        self.offsets = torch.arange(capacity, device=self.device)
        # zeros, not empty: masked slots get weight 0, and 0 * garbage could be NaN
        rows = (self.M, batch, self.n_kv_heads)
        kw = dict(dtype=self.dtype, device=self.device)
        return KVCache(
            keys=[torch.zeros(*rows, self.head_dim, capacity, **kw) for _ in range(self.n_layers)],
            values=[torch.zeros(*rows, capacity, self.head_dim, **kw) for _ in range(self.n_layers)],
            lengths=torch.zeros(batch, dtype=torch.int64, device=self.device),
        )

    def end(self) -> None:
        """Drop the weight snapshot (it is a copy of every model's weights)."""
        self.w = None

    @torch.no_grad()
    def forward(self, cache: KVCache, rows: torch.Tensor | None, tokens: torch.Tensor,
                n_new: torch.Tensor | None = None) -> torch.Tensor:
        """Append `tokens[i, :n_new[i]]` to row `rows[i]`'s cache; return their final hidden states.

        `rows=None` means every row of the cache, in order; else distinct sorted row ids.
        `tokens` is right-padded [b, L]; `n_new=None` means no padding, else every row gets
        at least one token. Returns `[M, N, hidden]` for the N appended tokens, row by row:
        padding is never computed, only attention sees a [rows, L] layout. Apply `logits`
        only where logits are needed.
        """
        geo = self._layout(cache, rows, tokens.shape, n_new)
        tokens = tokens.reshape(-1) if geo.valid is None else tokens[geo.valid]
        h = self.w.embed[:, tokens]  # [M, N, hidden]
        for i in range(self.n_layers):
            h = self._layer(i, h, cache, geo)
        cache.lengths[... if rows is None else rows] = geo.end
        return _norm(h, self.eps)

    def _layout(self, cache: KVCache, rows, shape, n_new) -> _Layout:
        b, L = shape
        B = cache.lengths.numel()
        start = cache.lengths if rows is None else cache.lengths[rows]
        positions = start[:, None] + self.offsets[None, :L]  # [b, L]
        padded = n_new is not None and L > 1
        end = start + n_new if padded else start + L
        lo, hi = torch.aminmax(end)
        T, aligned = int(hi), int(lo) == int(hi)  # aligned: every row ends at slot T
        if T > cache.capacity:
            raise RuntimeError("KV cache capacity exceeded (engine sized it too small)")
        valid = self.offsets[None, :L] < n_new[:, None] if padded else None
        flat = (lambda x: x.reshape(-1)) if valid is None else (lambda x: x[valid])
        row_ids = torch.arange(b, device=positions.device) if rows is None else rows
        write_rows, write_pos = flat(row_ids[:, None].expand(b, L)), flat(positions)
        if padded:
            groups = self._split(rows, positions, valid, n_new, T, B)
        else:
            groups = [self._group(None, rows, positions, None, T, B, aligned)]
        return _Layout(
            write_rows=write_rows, write_pos=write_pos, valid=valid, end=end, T=T, groups=groups,
            cos=self.cos[write_pos][:, None], sin=self.sin[write_pos][:, None],  # [N, 1, D]
        )

    def _split(self, rows, positions, valid, n_new, T, B) -> list[_Group]:
        """Rows fed one token attend unpadded; catch-up rows pad to their longest chunk."""
        b = n_new.numel()
        token_row = torch.arange(b, device=valid.device)[:, None].expand_as(valid)[valid]  # [N]
        groups = []
        for sel in (n_new == 1, n_new > 1):
            idx = sel.nonzero().squeeze(1)
            if idx.numel() == 0:
                continue
            whole = idx.numel() == b
            tokens = None if whole else sel[token_row].nonzero().squeeze(1)
            g_rows = rows if whole else (idx if rows is None else rows[idx])
            L = int(n_new[idx].max())
            groups.append(self._group(tokens, g_rows, positions[idx, :L], valid[idx, :L], T, B))
        return groups

    def _group(self, tokens, rows, positions, valid, T, B, aligned=False) -> _Group:
        b, L = positions.shape
        if aligned and L == 1:  # one new token per row, every row ends at T: nothing to mask
            return _Group(tokens, rows, b, 1, None, None)
        if rows is not None and L == 1 and 2 * b >= B:
            # Most of the batch: attend over every row (the others' queries are ignored) rather
            # than gather these rows' K/V, a copy of most of the cache per layer.
            every = torch.zeros(B, 1, dtype=positions.dtype, device=positions.device)
            every[rows] = positions
            scatter = (rows, torch.zeros_like(rows))
            return _Group(tokens, None, B, 1, scatter, self._attention_bias(every, T))
        scatter = None
        if valid is not None and L > 1:
            local = torch.arange(b, device=positions.device)[:, None].expand(b, L)
            scatter = (local[valid], self.offsets[None, :L].expand(b, L)[valid])
        return _Group(tokens, rows, b, L, scatter, self._attention_bias(positions, T))

    def _attention_bias(self, positions, T):
        """Additive mask [M*b*H_kv, G*L, T]: a query at position p sees its row's slots <= p."""
        b, L = positions.shape
        G = self.n_heads // self.n_kv_heads
        seen = self.offsets[None, None, :T] <= positions[:, :, None]  # [b, L, T]
        bias = torch.zeros(seen.shape, dtype=self.dtype, device=seen.device).masked_fill_(~seen, float("-inf"))
        return bias[None, :, None, None].expand(self.M, b, self.n_kv_heads, G, L, T).reshape(-1, G * L, T)

    def _layer(self, i: int, h: torch.Tensor, cache: KVCache, geo: _Layout) -> torch.Tensor:
        w, M, D, H, Hkv = self.w.layers[i], self.M, self.head_dim, self.n_heads, self.n_kv_heads
        qkv = _linear(_norm(h, self.eps), w.qkv, w.qkv_bias).view(M, -1, H + 2 * Hkv, D)  # [M, N, heads, D]
        qk, v = qkv[..., : H + Hkv, :], qkv[..., H + Hkv :, :]
        if w.qk_norm is not None:
            qk = _norm(qk, self.eps) * w.qk_norm
        qk = torch.addcmul(qk * geo.cos, torch.roll(qk, D // 2, -1), geo.sin)  # rotary embedding
        # advanced indices around slices put the token dimension first: values are [N, M, H_kv, D]
        cache.keys[i][:, geo.write_rows, :, :, geo.write_pos] = qk[..., H:, :].transpose(0, 1)
        cache.values[i][:, geo.write_rows, :, geo.write_pos] = v.transpose(0, 1)
        q, kv = qk[..., :H, :], (cache.keys[i], cache.values[i])
        if len(geo.groups) == 1 and geo.groups[0].tokens is None:
            out = self._attend(q, kv, geo.T, geo.groups[0])
        else:
            out = q.new_empty(M, q.shape[1], H * D)
            for g in geo.groups:
                out[:, g.tokens] = self._attend(q[:, g.tokens], kv, geo.T, g)
        h = _linear(out, w.o, w.o_bias, residual=h)
        gate_up = _linear(_norm(h, self.eps), w.gate_up, w.gate_up_bias)
        inter = gate_up.shape[-1] // 2
        return _linear(self.act(gate_up[..., :inter]) * gate_up[..., inter:], w.down, w.down_bias, residual=h)

    def _attend(self, q: torch.Tensor, kv: tuple, T: int, g: _Group) -> torch.Tensor:
        """Attention of queries q [M, n, H, D] over their rows' caches; returns [M, n, H*D]."""
        M, D, H, Hkv, b, L = self.M, self.head_dim, self.n_heads, self.n_kv_heads, g.b, g.L
        G = H // Hkv
        if g.rows is None:
            K, V = kv[0][..., :T], kv[1][:, :, :, :T]
        else:  # a copy of these rows' entries
            K, V = kv[0][:, g.rows, :, :, :T], kv[1][:, g.rows, :, :T]
        K, V = K.reshape(-1, D, T), V.reshape(-1, T, D)
        if g.scatter is not None:  # onto the padded [b, L] layout
            q_pad = q.new_zeros(M, b, L, H, D)
            q_pad[:, g.scatter[0], g.scatter[1]] = q
            q = q_pad
        q = q.reshape(M, b, L, Hkv, G, D).permute(0, 1, 3, 4, 2, 5).reshape(-1, G * L, D)
        if g.bias is None:
            scores = torch.bmm(q, K).mul_(self.scaling)
        else:
            scores = torch.baddbmm(g.bias, q, K, alpha=self.scaling)
        out = torch.bmm(torch.softmax(scores, dim=-1), V)  # [M*b*H_kv, G*L, D]
        out = out.view(M, b, Hkv, G, L, D).permute(0, 1, 4, 2, 3, 5)  # [M, b, L, H_kv, G, D]
        if g.scatter is not None:
            out = out[:, g.scatter[0], g.scatter[1]]
        return out.reshape(M, -1, H * D)

    @torch.no_grad()
    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Next-token logits [M, ..., V] from final hidden states [M, ..., H]."""
        flat = hidden.reshape(self.M, -1, hidden.shape[-1])
        out = _linear(flat, self.w.lm_head, self.w.lm_head_bias)
        return out.view(*hidden.shape[:-1], out.shape[-1])
