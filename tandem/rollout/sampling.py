"""Token sampling with per-request counter-based uniforms.

Pipeline, in order: logits / temperature -> top-k -> softmax -> top-p -> inverse-CDF draw
with one uniform per row. The uniform of response token `t` of a request comes from
`tandem.process.coins.sample_uniform(seed, key, t)`, so a request samples the same token whatever
batch it is in (given the same probabilities), and independently of the authorship coins.
Temperature 0 is greedy.

Log-probabilities reported for training are `log_softmax(logits / temperature)` without
top-k/top-p, which is what verl's actor recomputes (temperature 0 counts as 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tandem.errors import TandemError

if TYPE_CHECKING:  # imported where tensors are handled: a config (and a command's --help) needs no torch
    import torch


def check_sampling_values(cfg, name=lambda field: field) -> None:
    """Raise a `TandemError` for an invalid temperature, top_p, top_k or max_new_tokens of `cfg`.

    `name` maps a field to what the user typed (a CLI flag, say) for the message.
    """
    if cfg.temperature < 0:
        raise TandemError(f"{name('temperature')} must be >= 0, got {cfg.temperature}")
    if not 0 < cfg.top_p <= 1:
        raise TandemError(f"{name('top_p')} must be in (0, 1], got {cfg.top_p}")
    if cfg.top_k < 0:
        raise TandemError(f"{name('top_k')} must be >= 0 (0 = off), got {cfg.top_k}")
    if cfg.max_new_tokens < 1:
        raise TandemError(f"{name('max_new_tokens')} must be >= 1, got {cfg.max_new_tokens}")


@dataclass
class SamplingConfig:
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0  # 0 = off
    max_new_tokens: int = 256
    stop_strings: tuple[str, ...] = field(default_factory=tuple)  # the text is cut before the first match
    stop_token_ids: tuple[int, ...] = field(default_factory=tuple)  # like EOS: the token is kept, finish "stop"
    seed: int = 0  # keys the sampling uniforms
    eos_token_ids: tuple[int, ...] | None = None  # None = the tokenizer's and the model's EOS ids

    def __post_init__(self):
        check_sampling_values(self)
        self.stop_strings = tuple(self.stop_strings)
        self.stop_token_ids = tuple(int(i) for i in self.stop_token_ids)

    @property
    def logprob_temperature(self) -> float:
        return self.temperature if self.temperature > 0 else 1.0


def filtered_probs(logits: torch.Tensor, cfg: SamplingConfig) -> torch.Tensor:
    """The sampling distribution [b, V] after temperature, top-k and top-p."""
    import torch

    x = logits if cfg.temperature == 1 else logits / cfg.temperature
    if cfg.top_k and cfg.top_k < x.shape[-1]:
        kth = torch.topk(x, cfg.top_k, dim=-1).values[:, -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    probs = torch.softmax(x, dim=-1)
    if cfg.top_p < 1.0:
        sorted_p, order = torch.sort(probs, dim=-1, descending=True)
        drop_sorted = (torch.cumsum(sorted_p, dim=-1) - sorted_p) > cfg.top_p  # keeps the top token
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        probs = probs.masked_fill(drop, 0.0)
    return probs


def sample_tokens(logits: torch.Tensor, cfg: SamplingConfig, uniforms: torch.Tensor) -> torch.Tensor:
    """One token per row of `logits` [b, V], drawn by inverse CDF with `uniforms` [b] (float64)."""
    import torch

    if cfg.temperature == 0:
        return logits.argmax(dim=-1)
    probs = filtered_probs(logits, cfg).to(torch.float64)
    cdf = torch.cumsum(probs, dim=-1)
    target = uniforms.to(cdf.device, torch.float64)[:, None] * cdf[:, -1:]
    idx = torch.searchsorted(cdf, target, right=True).squeeze(-1)
    return idx.clamp_(max=logits.shape[-1] - 1)


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor, temperature: float) -> torch.Tensor:
    """log p(token) under log_softmax(logits / temperature); logits [..., V], tokens [...]."""
    import torch

    x = logits if logits.dtype in (torch.float32, torch.float64) else logits.float()
    logp = torch.log_softmax(x if temperature == 1 else x / temperature, dim=-1)
    return logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
