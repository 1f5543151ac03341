"""The authorship state of the requests an engine holds, one row each: the table vLLM's V1 and V2 adapters share.

Four tensors per row, on one device, the fields of `tandem.process.authorship.TandemState`: who writes the
next token (`author`, True = the senior), the tokens since the last redraw (`since`), the next
coin to draw (`coin`) and the request's key (`keys`). `start` puts rows at their request's first
state; `fold` advances rows by one token each with `tandem.process.authorship.advance`, batched over rows.

What a row is and when its tokens arrive is each runner's bookkeeping, kept in its adapter:
V1's persistent batch moves and swaps requests between rows and hands the tokens over on the
host (`batch_state`); V2 keeps a request in one slot and the newest token on the device
(`slot_state`). This module imports no vLLM.
"""

from __future__ import annotations

import torch

from tandem.process.config import TandemConfig
from tandem.process.authorship import TandemState, advance, start_state


class AuthorTable:
    """`author`, `since`, `coin` and `keys` of `n` rows on `device`; see the module docstring."""

    def __init__(self, cfg: TandemConfig, is_boundary: torch.Tensor | None, n: int, device: torch.device | str = "cpu"):
        self.cfg, self.device = cfg, torch.device(device)
        self.is_boundary = None if is_boundary is None else is_boundary.to(self.device)
        on = {"device": self.device}
        self.author = torch.ones(n, dtype=torch.bool, **on)  # True = the senior writes the next token
        self.since = torch.zeros(n, dtype=torch.int64, **on)
        self.coin = torch.zeros(n, dtype=torch.int64, **on)  # the next coin to draw
        self.keys = torch.zeros(n, dtype=torch.int64, **on)

    def tensors(self) -> tuple[torch.Tensor, ...]:
        """The four per-row tensors, for an adapter that moves rows."""
        return self.author, self.since, self.coin, self.keys

    def write(self, idx, author, since, coin, keys) -> None:
        """Set rows `idx` (an index or index tensor on the table's device) to the given values."""
        self.author[idx], self.since[idx], self.coin[idx], self.keys[idx] = author, since, coin, keys

    def start(self, idx, keys: torch.Tensor) -> None:
        """Rows `idx` at the first state of the requests keyed `keys` (LongTensor, one key per row)."""
        s = start_state(self.cfg, keys)
        self.write(idx, s.author, s.since_redraw, s.coin_index, keys)

    def fold(self, idx: torch.Tensor, tokens: torch.Tensor, next_author: torch.Tensor | None = None) -> None:
        """Advance rows `idx` (distinct) by one token each.

        next_author: None, and `advance` draws each row's coin from its key; or [rows] bool, the author
        (True = senior) of the one coin each row can draw next, decided ahead on the host
        (`tandem.process.authorship.coin_author`) so that no key is copied to the device in a step.
        """
        author, since, coin, keys = (t[idx] for t in self.tensors())
        if next_author is None:
            nxt = advance(self.cfg, self.is_boundary, TandemState(author, since, coin, keys), tokens)
            drawn = nxt.coin_index - coin
        else:  # `advance` reads author `coin_index` of those it is given: hand it the one, at index 0
            state = TandemState(author, since, torch.zeros_like(coin), keys, next_author[:, None], covered=2)
            nxt = advance(self.cfg, self.is_boundary, state, tokens)
            drawn = nxt.coin_index
        self.author[idx], self.since[idx], self.coin[idx] = nxt.author, nxt.since_redraw, coin + drawn
