"""The one result type and the one generation protocol every backend implements.

A backend is anything with a `tokenizer` and `generate(prompts, sampling, request_keys,
solo)` returning one `Rollout` per prompt: the reference engine (`tandem.engine`), the
vLLM engine (`vllm_source.engine.VLLMEngine`). The eval and the CLI take either; the
embedded trainer calls `generate` on a reference engine over the senior it trains. Who writes each token is decided by the backend's `TandemConfig` (fixed
when the backend is built); `solo=True` lets the senior write every token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from tandem.sampling import SamplingConfig


@dataclass
class Rollout:
    """One response of a backend."""

    prompt_ids: list[int]
    token_ids: list[int]
    authorship_mask: list[int]  # 1 = the senior wrote the token (all 1 in solo mode)
    text: str  # decoded response, cut before a matched stop string
    finish_reason: str  # "stop" (EOS, stop token or stop string) | "length"
    request_key: int | None = None  # keys the request's coins and sampling
    senior_logprobs: list[float] | None = None  # the senior's log-probability of each emitted token
    junior_logprobs: list[float] | None = None  # the junior's, where the backend reports it

    @property
    def senior_fraction(self) -> float:
        return sum(self.authorship_mask) / max(1, len(self.authorship_mask))

    @property
    def num_handoffs(self) -> int:
        """How often authorship changes within the response."""
        m = self.authorship_mask
        return sum(a != b for a, b in zip(m, m[1:]))


@runtime_checkable
class RolloutBackend(Protocol):
    """Generates rollouts; see the module docstring."""

    tokenizer: Any

    def generate(self, prompts: list[list[int]], sampling: SamplingConfig, request_keys: list[int],
                 solo: bool = False) -> list[Rollout]:
        """One response per token-id prompt, in order; `request_keys[i]` keys prompt i's coins and sampling."""
        ...
