"""Per-request authorship state on vLLM's V2 model runner, indexed by request slot.

The V2 runner keeps each request in a slot (`req_states`) for its whole stay and recycles
slots through a free list. A logits processor learns of a request once, on its slot
(`add_request(slot, sampling_params)`: fresh, or resumed after a preemption with its
tokens so far), is told of no removals or moves, and reads every request's committed
tokens from `req_states` (`all_token_ids`, `prompt_len`, `total_len`, written on the device
by the runner after each sampling step, so under async scheduling too). Each step it gets
the slots of the rows to sample (`LogitsContext.idx_mapping`).

This module keeps one authorship state per slot and folds each slot's output tokens into
it with `tandem.process.advance` (batched over slots), as `batch_state.py` does per row on
V1. A slot is solo until a tandem request is added to it: vLLM's own requests (kernel
warm-up, profiling passes: no tandem key, `requests.is_vllm_own_request`) and never-used slots
get no state and no junior rows. It imports no vLLM: tokens come through a reader callable, so CPU tests drive it
directly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from tandem.config import TandemConfig
from tandem.errors import TandemError
from tandem.process import TandemState, advance, start_state
from vllm_source.requests import is_vllm_own_request, parse_tandem_extra_args

# tokens(slots, starts, ends) -> the output tokens [start, end) of each slot, one list per slot.
TokenReader = Callable[[np.ndarray, np.ndarray, np.ndarray], list[list[int]]]


class TandemSlotState:
    """Authorship state (author, since_redraw, coin_index, key) for each request slot."""

    def __init__(self, cfg: TandemConfig, is_boundary: torch.Tensor | None, max_num_reqs: int):
        self.cfg, self.is_boundary = cfg, is_boundary
        n = max_num_reqs
        self.author = torch.ones(n, dtype=torch.bool)  # True = the senior writes the next token
        self.since = torch.zeros(n, dtype=torch.int64)
        self.coin = torch.zeros(n, dtype=torch.int64)
        self.keys = torch.zeros(n, dtype=torch.int64)
        self.solo = torch.ones(n, dtype=torch.bool)  # a slot no tandem request was added to is solo
        self.folded = np.zeros(n, dtype=np.int64)  # output tokens already folded into each slot's state
        self.started = 0  # keyed requests added so far (the model tells dummy runs apart by it)

    @property
    def batch_size(self) -> int:
        """0 before the first request (vLLM's dummy runs), else the slots that have held one.

        V2 reports no removals, so this is not the live batch; the wrapper model only asks
        whether any request exists yet (`handoff.JuniorLogitsSlot.live_rows`).
        """
        return self.started

    def all_solo(self) -> bool:
        """False: the step's rows are known only in `apply`, after the model ran (the junior runs every step)."""
        return False

    def add(self, slot: int, extra_args: dict | None) -> bool:
        """(Re)start `slot` for a request; True when the processor changes its logits (not solo).

        A resumed request starts from its first output token again: `catch_up` replays the
        tokens vLLM hands back with it, as the state is a pure function of the tokens.
        vLLM's own key-less requests only mark the slot solo (`requests.is_vllm_own_request`).
        """
        self.folded[slot] = 0
        if is_vllm_own_request(extra_args):  # warm-up, profiling: solo, and not counted as started
            self.solo[slot] = True
            return False
        key, solo = parse_tandem_extra_args(extra_args)
        s = start_state(self.cfg, torch.tensor([key]))
        self.author[slot], self.since[slot], self.coin[slot] = s.author[0], s.since_redraw[0], s.coin_index[0]
        self.keys[slot], self.solo[slot] = key, solo
        self.started += 1
        return not solo

    def any_tandem(self, slots: np.ndarray) -> bool:
        """Whether any of `slots` holds a tandem (not solo) request: else the step needs no junior."""
        return not bool(self.solo[torch.as_tensor(np.asarray(slots, dtype=np.int64))].all())

    def catch_up(self, slots: np.ndarray, output_lens: np.ndarray, tokens: TokenReader) -> None:
        """Fold every committed, not yet folded output token of `slots` into their states.

        output_lens: the committed output length of each slot (vLLM's `total_len - prompt_len`).
        """
        slots = np.asarray(slots, dtype=np.int64)
        lens = np.asarray(output_lens, dtype=np.int64)
        tandem = ~self.solo.numpy()[slots]
        shrunk = tandem & (lens < self.folded[slots])
        if shrunk.any():
            raise TandemError(f"request slots {slots[shrunk].tolist()} lost output tokens already folded in")
        todo = tandem & (lens > self.folded[slots])
        if not todo.any():
            return
        slots, lens = slots[todo], lens[todo]
        rows = tokens(slots, self.folded[slots].copy(), lens)
        if [len(r) for r in rows] != (lens - self.folded[slots]).tolist():
            raise TandemError("the token reader returned another number of tokens than asked for")
        width = max(len(r) for r in rows)
        for i in range(width):  # one batched advance per position: the slots still holding a token there
            live = [j for j, r in enumerate(rows) if len(r) > i]
            idx = torch.as_tensor(slots[live], dtype=torch.int64)
            step = torch.tensor([rows[j][i] for j in live], dtype=torch.int64)
            state = TandemState(self.author[idx], self.since[idx], self.coin[idx], self.keys[idx])
            nxt = advance(self.cfg, self.is_boundary, state, step)
            self.author[idx], self.since[idx], self.coin[idx] = nxt.author, nxt.since_redraw, nxt.coin_index
        self.folded[slots] += np.array([len(r) for r in rows], dtype=np.int64)

    def senior_rows(self, slots: np.ndarray) -> torch.Tensor:
        """BoolTensor[len(slots)]: True where the senior writes this step's token (solo rows included)."""
        idx = torch.as_tensor(np.asarray(slots, dtype=np.int64))
        return self.author[idx] | self.solo[idx]
