"""The one result type and the one generation protocol every backend implements.

A backend is anything with a `tokenizer` and `generate(prompts, sampling, request_keys,
solo)` returning one `Rollout` per prompt: the reference engine (`tandem.reference.engine`), the
vLLM engine (`vllm_source.engine.VLLMEngine`). The eval and the CLI take either; the
embedded trainer calls `generate` on a reference engine over the senior it trains. Who
writes each token is decided by the backend's `TandemConfig` (fixed when the backend is
built); `solo=True` lets the senior write every token.

The rollout statistics live here too, once: `rollout_stats` counts authorship over a
batch of masks and `RolloutStats.metrics` names the results (`SENIOR_TOKEN_FRACTION`,
`MEAN_HANDOFFS`, `JUNIOR_ONLY_RESPONSE_FRACTION`) for the embedded trainer, the eval,
the HF TRL integration and the verl gate alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass
from typing import Any, Protocol, runtime_checkable

import torch

from tandem.errors import TandemError
from tandem.io.metric_log import JUNIOR_ONLY_RESPONSE_FRACTION, MEAN_HANDOFFS, SENIOR_TOKEN_FRACTION, batch_metrics
from tandem.rollout.sampling import SamplingConfig



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
    def senior_token_fraction(self) -> float:
        """The share of this response's tokens the senior wrote (`metric_log.SENIOR_TOKEN_FRACTION` of one)."""
        return sum(self.authorship_mask) / max(1, len(self.authorship_mask))

    @property
    def num_handoffs(self) -> int:
        """How often authorship changes within the response."""
        m = self.authorship_mask
        return sum(a != b for a, b in zip(m, m[1:]))


def check_request_keys(keys, prompts) -> None:
    """Every backend's rule: one request key per prompt."""
    if len(keys) != len(prompts):
        raise TandemError(f"{len(keys)} request keys for {len(prompts)} prompts; pass one key per prompt")


def cut_at_stop(text: str, stop_strings, stopped: bool) -> str:
    """A response's text cut before the first matched stop string, when the response stopped (every backend)."""
    if not stopped or not stop_strings:
        return text
    hits = [text.find(s) for s in stop_strings if s in text]
    return text[: min(hits)] if hits else text


@runtime_checkable
class RolloutBackend(Protocol):
    """Generates rollouts; see the module docstring."""

    tokenizer: Any

    def generate(self, prompts: list[list[int]], sampling: SamplingConfig, request_keys: list[int],
                 solo: bool = False) -> list[Rollout]:
        """One response per token-id prompt, in order; `request_keys[i]` keys prompt i's coins and sampling."""
        ...


@dataclass
class RolloutStats:
    """Authorship counts of a batch of responses; sums, so batches and ranks add up (`as_tensor`)."""

    responses: float = 0.0
    response_tokens: float = 0.0
    senior_tokens: float = 0.0
    handoffs: float = 0.0
    junior_only_responses: float = 0.0

    def as_tensor(self, device=None) -> torch.Tensor:
        return torch.tensor(astuple(self), dtype=torch.float64, device=device)

    @classmethod
    def from_tensor(cls, t: torch.Tensor):
        return cls(*[float(x) for x in t.tolist()])

    def metrics(self, prefix: str = "") -> dict[str, float]:
        """The batch's statistics under their shared names, through `tandem.io.metric_log.batch_metrics`."""
        return batch_metrics({
            SENIOR_TOKEN_FRACTION: self.senior_tokens / max(1.0, self.response_tokens),
            MEAN_HANDOFFS: self.handoffs / max(1.0, self.responses),
            JUNIOR_ONLY_RESPONSE_FRACTION: self.junior_only_responses / max(1.0, self.responses),
        }, prefix)


def rollout_stats(authorship: torch.Tensor, valid: torch.Tensor) -> RolloutStats:
    """Counts over right-padded [B, T] masks (one row per response, empty ones included):
    `authorship` 1 = senior, `valid` 1 = a response token."""
    valid = valid.bool()
    senior = authorship.bool() & valid
    handoffs = (authorship[:, 1:] != authorship[:, :-1]) & valid[:, 1:]
    junior_only = valid.any(-1) & ~senior.any(-1)
    rows = torch.tensor(valid.shape[0], device=valid.device)
    counts = torch.stack([rows, valid.sum(), senior.sum(), handoffs.sum(), junior_only.sum()])
    return RolloutStats.from_tensor(counts)  # the one host sync


def stats_of_masks(masks: Sequence[Sequence[int]]) -> RolloutStats:
    """`rollout_stats` of per-response authorship masks (lists, as in `Rollout.authorship_mask`)."""
    if not masks:
        return RolloutStats()
    width = max(1, max(len(m) for m in masks))
    authorship = torch.zeros(len(masks), width, dtype=torch.bool)
    valid = torch.zeros(len(masks), width, dtype=torch.bool)
    for i, m in enumerate(masks):
        authorship[i, : len(m)] = torch.tensor(m, dtype=torch.bool)
        valid[i, : len(m)] = True
    return rollout_stats(authorship, valid)
