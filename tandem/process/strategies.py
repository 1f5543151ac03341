"""Selection strategies: one registry entry holds everything a strategy is.

A strategy decides when the author of the next token is redrawn. Its entry says whether
the new author comes from a coin (`draws_coins`; otherwise the author toggles), which
boundary set it reads (`boundary_kind`: word starts, sentence ends, step breaks, or none),
and its redraw rule twice: step by step (`due`, what `tandem.process.authorship.advance` applies
after each token) and in closed form over a whole response (`due_after`, what
`tandem.process.authorship.replay_mask` uses). tests/test_process.py checks, for every registered
strategy, that the two forms agree token for token.

The rules take the config's numbers (`max_gap_tokens`, `chunk_size`) from `cfg` and a
boundary-hit tensor computed by the caller, so this file needs no tokenizer and no torch
state beyond the tensors it is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where a rule runs: reading the registry (a config, --help) needs no torch
    import torch

# (cfg, hit [B], since [B]) -> BoolTensor[B]: redraw after this token? `since` counts tokens
# since the last redraw, this one included.
StepRule = Callable[..., "torch.Tensor"]
# (cfg, hit [B, T], pos [T]) -> BoolTensor[B, T]: redraw right after each token?
ClosedRule = Callable[..., "torch.Tensor"]


@dataclass(frozen=True)
class Strategy:
    name: str
    draws_coins: bool  # the next author is a coin (p = prob_senior); else the author toggles
    boundary_kind: str | None  # the boundary set `tandem.process.boundaries` derives for it
    due: StepRule
    due_after: ClosedRule
    summary: str


REGISTRY: dict[str, Strategy] = {}


def register_strategy(strategy: Strategy) -> Strategy:
    if strategy.name in REGISTRY:
        raise ValueError(f"selection strategy {strategy.name!r} is registered twice")
    REGISTRY[strategy.name] = strategy
    return strategy


def _every(cfg, hit, since_or_pos):
    import torch

    return torch.ones_like(hit, dtype=torch.bool)


def _at_boundary(cfg, hit, since_or_pos):
    return hit


def _word_due(cfg, hit, since):
    return hit | (since >= cfg.max_gap_tokens)


def _word_due_after(cfg, hit, pos):
    """A boundary resets the count; between boundaries the gap rule fires every `max_gap_tokens`."""
    import torch

    B = hit.shape[0]
    last_hit = torch.where(hit, pos, -1).cummax(dim=1).values
    before = torch.cat([torch.full((B, 1), -1, device=hit.device), last_hit[:, :-1]], dim=1)
    return hit | ((pos - before) % cfg.max_gap_tokens == 0)


def _chunk_due(cfg, hit, since):
    return since >= cfg.chunk_size


def _chunk_due_after(cfg, hit, pos):
    return ((pos + 1) % cfg.chunk_size == 0).expand(hit.shape)


for _strategy in (
    Strategy("word", True, "word", _word_due, _word_due_after,
             "a coin at each word start, and after max_gap_tokens without one (the paper's)"),
    Strategy("bernoulli", True, None, _every, _every, "a coin after every token"),
    Strategy("sentence", False, "sentence", _at_boundary, _at_boundary, "the author toggles after each sentence end"),
    Strategy("alternating", False, None, _every, _every, "the author toggles after every token"),
    Strategy("chunk", False, None, _chunk_due, _chunk_due_after, "the author toggles every chunk_size tokens"),
    Strategy("step", False, "step", _at_boundary, _at_boundary, "the author toggles after each blank line"),
):
    register_strategy(_strategy)

NAMES = tuple(REGISTRY)


def strategy(name: str) -> Strategy:
    """The registry entry of `name` (a `KeyError` for an unknown one; configs check names first)."""
    return REGISTRY[name]
