"""The tandem process: who writes the next token, as pure functions on batched state.

Each request carries `author` (True = the senior writes the next token), `since_redraw`
(tokens emitted since the author was last drawn) and `coin_index` (coins drawn so far).
`start_state` draws the first author; `advance` consumes one emitted token per request
and returns the state for the next token. Because the author of a token is known before
it is sampled, an engine samples from that model's distribution only. Coins are
counter-based (`tandem.process.coins`), so `replay_mask` recomputes any mask from tokens alone.
A generation that knows its token budget asks `start_state` for a coin table: the authors
the coins of the whole budget name, drawn in one call and looked up per token (the same
coins, without hashing on every step). A coin is decided in one place, `coin_author`.

Every backend calls these functions; none re-implements them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tandem.process.coins import coin_uniform
from tandem.process.config import TandemConfig
from tandem.process.strategies import strategy


@dataclass(frozen=True)
class TandemState:
    """Authorship state of B requests. All fields are tensors of shape [B]."""

    author: torch.Tensor  # bool: True = senior writes the next token
    since_redraw: torch.Tensor  # int64
    coin_index: torch.Tensor  # int64: index of the next coin to draw
    keys: torch.Tensor  # int64: request keys
    next_authors: torch.Tensor | None = None  # bool [B, n]: the authors coins 0..n-1 name, drawn ahead (a cache)
    covered: int = 0  # tokens `advance` may still consume before `next_authors` could run out

    def select(self, rows: torch.Tensor) -> "TandemState":
        ahead = None if self.next_authors is None else self.next_authors[rows]
        return TandemState(self.author[rows], self.since_redraw[rows], self.coin_index[rows], self.keys[rows],
                           ahead, self.covered)


def coin_author(cfg: TandemConfig, u: torch.Tensor) -> torch.Tensor:
    """BoolTensor like `u`: the author each coin uniform names (True = senior, with probability prob_senior).

    The one place a coin is decided: engines that draw coins ahead hand `advance` this, not the uniforms.
    """
    return u < cfg.prob_senior


def start_state(cfg: TandemConfig, keys, n_tokens: int = 0) -> TandemState:
    """State at the start of each response: the first author is drawn (coin 0) or `first_author`.

    `n_tokens > 0` draws the coins of that many tokens up front (coin 0 plus at most one
    per token); past them `advance` draws coins one step at a time, as without a table.
    """
    keys = torch.as_tensor(keys, dtype=torch.int64)
    zeros = torch.zeros_like(keys)
    if not cfg.uses_coins:
        author = torch.full(keys.shape, cfg.first_author == "senior", dtype=torch.bool, device=keys.device)
        return TandemState(author, zeros.clone(), zeros, keys)
    ahead = None
    if n_tokens > 0:
        ks = torch.arange(n_tokens + 1, device=keys.device)[None]
        ahead = coin_author(cfg, coin_uniform(cfg.seed, keys[:, None], ks))
        first = ahead[:, 0]
    else:
        first = coin_author(cfg, coin_uniform(cfg.seed, keys, zeros))
    return TandemState(first, zeros.clone(), zeros + 1, keys, ahead, n_tokens)


def boundary_hit(is_boundary: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """BoolTensor like `tokens`: is each token a boundary? Ids outside the lookup are not."""
    return is_boundary[tokens.clamp(0, is_boundary.numel() - 1)] & (tokens < is_boundary.numel())


def redraw_due(cfg: TandemConfig, is_boundary: torch.Tensor | None, since: torch.Tensor, tokens: torch.Tensor):
    """BoolTensor[B]: does the strategy redraw the author after these tokens? (its `due` rule)"""
    rule = strategy(cfg.selection_strategy)
    hit = boundary_hit(is_boundary, tokens) if rule.boundary_kind else torch.zeros_like(tokens, dtype=torch.bool)
    return rule.due(cfg, hit, since)


def advance(cfg: TandemConfig, is_boundary: torch.Tensor | None, state: TandemState, tokens) -> TandemState:
    """Consume one emitted token per request; return the state for the next token."""
    tokens = torch.as_tensor(tokens, dtype=torch.int64, device=state.keys.device)
    since = state.since_redraw + 1
    due = redraw_due(cfg, is_boundary, since, tokens)
    ahead, covered = state.next_authors, state.covered - 1
    if cfg.uses_coins:
        if ahead is not None:  # coin_index <= tokens consumed + 1 <= table width - 1
            named = ahead.gather(1, state.coin_index[:, None])[:, 0]
        else:
            named = coin_author(cfg, coin_uniform(cfg.seed, state.keys, state.coin_index))
        author = torch.where(due, named, state.author)
        coin_index = state.coin_index + due
        if covered <= 0:
            ahead = None
    else:
        author = torch.where(due, ~state.author, state.author)
        coin_index = state.coin_index
    since = since.masked_fill(due, 0)
    return TandemState(author, since, coin_index, state.keys, ahead, covered)


def redraws_after(cfg: TandemConfig, is_boundary, tokens: torch.Tensor) -> torch.Tensor:
    """BoolTensor[B, T]: is the author redrawn right after each token? `advance`'s rule in closed form.

    The strategy's `due_after` (tandem/process/strategies.py); e.g. for `word` the count after token
    p is its distance to the last boundary before p (mod the gap).
    """
    rule = strategy(cfg.selection_strategy)
    pos = torch.arange(tokens.shape[1], device=tokens.device)
    hit = boundary_hit(is_boundary, tokens) if rule.boundary_kind else torch.zeros_like(tokens, dtype=torch.bool)
    return rule.due_after(cfg, hit, pos)


def replay_mask(cfg: TandemConfig, is_boundary, response_tokens, keys, lengths=None) -> torch.Tensor:
    """Recompute the authorship mask (LongTensor[B, T], 1 = senior) of finished responses.

    Vectorised over the coin table: token t's author comes from coin number "redraws
    before t" (coin 0 is the first author), so no per-token loop runs. It equals stepping
    `advance` token by token (tests/test_process.py pins that). Positions at or beyond a
    row's length are 0.
    """
    tokens = torch.as_tensor(response_tokens, dtype=torch.int64)
    if tokens.dim() == 1:
        tokens = tokens[None]
    B, T = tokens.shape
    keys = torch.as_tensor(keys, dtype=torch.int64).reshape(B, 1)
    due = redraws_after(cfg, is_boundary, tokens).long()
    redraws_before = torch.cumsum(due, dim=1) - due
    if cfg.uses_coins:
        mask = coin_author(cfg, coin_uniform(cfg.seed, keys, redraws_before)).long()
    else:
        first = int(cfg.first_author == "senior")
        mask = first ^ (redraws_before % 2)
    if lengths is not None:
        lengths = torch.as_tensor(lengths, dtype=torch.int64).reshape(B, 1)
        mask = mask * (torch.arange(T)[None, :] < lengths)
    return mask


def stepped_mask(cfg: TandemConfig, is_boundary, tokens: torch.Tensor, keys) -> torch.Tensor:
    """The authorship mask by stepping `advance` token by token, as an engine decides it.

    The definition `replay_mask` must equal (tests/test_process.py); `scripts/bench_replay.py`
    times both.
    """
    B, T = tokens.shape
    state = start_state(cfg, torch.as_tensor(keys, dtype=torch.int64).reshape(B), n_tokens=T)
    columns = []
    for t in range(T):
        columns.append(state.author.long())
        state = advance(cfg, is_boundary, state, tokens[:, t])
    return torch.stack(columns, dim=1) if columns else torch.zeros(B, 0, dtype=torch.int64)


def response_authorship_mask(cfg: TandemConfig, is_boundary, token_ids: list[int], key: int,
                             solo: bool = False) -> list[int]:
    """The authorship mask (1 = senior) of one finished response, from its tokens, the config and its key.

    A solo response is the senior's throughout. Every backend that cannot hand the mask
    out of its engine (vLLM, verl's agent loop) recomputes it here: because the coins are
    keyed, this equals what the engine decided token by token.
    """
    if solo:
        return [1] * len(token_ids)
    if not token_ids:
        return []
    return replay_mask(cfg, is_boundary, torch.tensor([token_ids]), [key])[0].tolist()
