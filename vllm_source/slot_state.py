"""Per-request authorship state on vLLM's V2 model runner, indexed by request slot, kept on the device.

The V2 runner keeps each request in a slot (`req_states`) for its whole stay and recycles
slots through a free list. A logits processor learns of a request once, on its slot
(`add_request(slot, sampling_params)`: fresh, or resumed after a preemption with its
tokens so far), is told of no removals or moves, and each step gets the slots of the rows
to sample (`LogitsContext.idx_mapping_np`), an upper bound of each row's sequence length on
the host (`seq_lens_upper_bound_np`, exact without speculative decoding) and, on the device,
the token fed at each row's position (`input_ids`): the newest committed token, which under
async scheduling the host does not know yet.

So the authorship state (the shared `vllm_source.author_table.AuthorTable`: author, tokens
since the last redraw, next coin, key) lives on the device and `step` folds each row's newest
token into it there, batched over rows: the host only counts tokens (`folded`, from the lengths) and decides
nothing from a device value. Nothing is read back to the host in a step; the indices it
uploads go through pinned memory without blocking. A token count that jumps by more than one
(a request resumed after preemption, a chunked prefill) is caught up from the runner's
committed tokens (`all_token_ids`), gathered on the device.

Coins: `advance` would draw a coin by hashing the request key on the device, from a Python
scalar it copies there first (a synchronising copy). Instead `add` draws the request's coins
on the host ahead, one per possible token (`max_tokens + 1`, at most one redraw per token),
as a device table of the author each coin names (`tandem.process.authorship.coin_author`, the one place
a coin is decided), and `step` hands `advance` the one next author it can use. Starts are staged on the host and uploaded with the next step (`flush`).

A slot is solo until a tandem request is added to it: vLLM's own requests (kernel warm-up,
profiling passes: no tandem key, `requests.is_vllm_own_request`) and never-used slots get no
state and no junior rows. A junior-solo request (the transfer reward's receiver) keeps no state
either: its slot is the junior's at every token. This module imports no vLLM: CPU tests drive it directly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from tandem.process.coins import coin_uniform
from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from tandem.process.authorship import coin_author, start_state
from vllm_source.author_table import AuthorTable
from vllm_source.requests import is_junior_solo, is_vllm_own_request, parse_tandem_extra_args

# read(slots, starts, ends) -> LongTensor[len(slots), max(ends - starts)] on the device: the output
# tokens [start, end) of each slot, left-aligned (the tail of shorter rows is never read).
SpanReader = Callable[[np.ndarray, np.ndarray, np.ndarray], torch.Tensor]


class TandemSlotState:
    """Authorship state of every request slot, on `device`; see the module docstring."""

    def __init__(self, cfg: TandemConfig, is_boundary: torch.Tensor | None, max_num_reqs: int, max_tokens: int,
                 device: torch.device | str = "cpu"):
        self.cfg, self.device, self.max_tokens = cfg, torch.device(device), max_tokens
        n, on = max_num_reqs, {"device": self.device}
        self.table = AuthorTable(cfg, is_boundary, n, self.device)
        # the author coin k of each slot's request names (True = senior); coin strategies only
        self.authors_ahead = torch.zeros(n, max_tokens + 1, dtype=torch.bool, **on) if cfg.uses_coins else None
        self.solo = np.ones(n, dtype=bool)  # host: a slot no tandem request was added to is solo
        self.junior_solo = np.zeros(n, dtype=bool)  # host: the junior writes every token of the slot's request
        self.folded = np.zeros(n, dtype=np.int64)  # host: output tokens folded into each slot's state
        self.started = 0  # keyed requests added so far (the model tells dummy runs apart by it)
        self._staged: dict[int, tuple] = {}  # slot -> its request's start, uploaded by `flush`

    @property
    def batch_size(self) -> int:
        """0 before the first request (vLLM's dummy runs), else the slots that have held one.

        V2 reports no removals, so this is not the live batch; the wrapper model only asks
        whether any request exists yet (`handoff.JuniorLogitsSlot.live_rows`).
        """
        return self.started

    def all_solo(self) -> bool:
        """True when every slot's latest request is solo, after the first request: then so is every row of
        the step, and the wrapper model skips the junior.

        A step's rows (`idx_mapping`) reach only the sampler, after the model ran; but `add` runs
        for each new request before the forward of its first step, and a slot's flag is that of
        its latest request. A finished tandem request's slot keeps False until reused: the junior
        then runs (safe). Before any request (profiling, warm-up, CUDA graph capture) the junior
        always runs, so memory profiling and a captured graph hold it. Host flags only: no sync.
        """
        return self.started > 0 and bool(self.solo.all())

    def add(self, slot: int, extra_args: dict | None, max_tokens: int | None = None) -> bool:
        """(Re)start `slot` for a request of at most `max_tokens` output tokens (None: `self.max_tokens`);
        True when the processor changes its logits (not solo).

        A resumed request starts from its first output token again: `step` replays the
        tokens vLLM hands back with it, as the state is a pure function of the tokens.
        vLLM's own key-less requests only mark the slot solo (`requests.is_vllm_own_request`).
        """
        self.folded[slot] = 0
        self._staged.pop(slot, None)
        self.junior_solo[slot] = False
        if is_vllm_own_request(extra_args):  # warm-up, profiling: solo, and not counted as started
            self.solo[slot] = True
            return False
        key, solo = parse_tandem_extra_args(extra_args)
        self.solo[slot] = solo
        self.junior_solo[slot] = is_junior_solo(extra_args)
        self.started += 1
        if not solo and not self.junior_solo[slot]:
            self._staged[slot] = self._start(key, self.max_tokens if max_tokens is None
                                             else min(max_tokens, self.max_tokens))
        return not solo

    def _start(self, key: int, max_tokens: int) -> tuple:
        """(author, since, coin, key, junior coins or None) of a request's first token, on the host.

        Coin k is read while folding token k at the latest (one coin at the start, at most one
        per token), so `max_tokens + 1` coins cover the request; the table's tail is never read.
        """
        keys = torch.tensor([key], dtype=torch.int64)
        s = start_state(self.cfg, keys)
        named = None
        if self.authors_ahead is not None:  # host numpy: a step touches torch on the device only
            named = coin_author(self.cfg, coin_uniform(self.cfg.seed, keys, torch.arange(max_tokens + 1))).numpy()
        return bool(s.author[0]), int(s.since_redraw[0]), int(s.coin_index[0]), key, named

    def flush(self) -> None:
        """Upload the staged starts (a pinned, non-blocking copy per field; no host wait)."""
        if not self._staged:
            return
        slots = np.fromiter(self._staged, dtype=np.int64)
        rows = [self._staged[s] for s in slots.tolist()]
        self._staged = {}
        idx = self.to_device(slots)
        self.table.write(idx, *(self.to_device(np.array([r[i] for r in rows], dtype=dtype))
                                for i, dtype in enumerate((bool, np.int64, np.int64, np.int64))))
        if self.authors_ahead is not None:
            table = np.zeros((len(rows), self.authors_ahead.shape[1]), dtype=bool)  # past a request's coins: unread
            for i, r in enumerate(rows):
                table[i, : r[4].shape[0]] = r[4]
            self.authors_ahead[idx] = self.to_device(table)

    def any_tandem(self, slots: np.ndarray) -> bool:
        """Whether any of `slots` holds a tandem (not solo) request: else the step needs no junior."""
        return not bool(self.solo[np.asarray(slots, dtype=np.int64)].all())

    def step(self, slots: np.ndarray, output_lens: np.ndarray, newest: torch.Tensor, read: SpanReader
             ) -> torch.Tensor:
        """Fold each row's new output tokens in; the senior mask of this step's rows (BoolTensor on the device).

        slots, output_lens: host arrays per row: the slot, and its committed output tokens
        (sequence length minus prompt; 0 or less while the prompt is still being read).
        newest: [rows] on the device, each row's newest committed token (the token fed at its
        position): output token `output_lens - 1`. Older unfolded tokens come from `read`.
        Solo rows are the senior's, junior-solo rows the junior's; neither folds a token.
        """
        self.flush()
        slots = np.asarray(slots, dtype=np.int64)
        lens = np.maximum(np.asarray(output_lens, dtype=np.int64), 0)
        tandem = ~self.solo[slots] & ~self.junior_solo[slots]
        shrunk = tandem & (lens < self.folded[slots])
        if shrunk.any():
            raise TandemError(f"request slots {slots[shrunk].tolist()} lost output tokens already folded in")
        behind = tandem & (lens - self.folded[slots] > 1)
        if behind.any():  # resumed or chunked: tokens before the newest, from the committed tokens
            self._fold_span(slots[behind], self.folded[slots[behind]], lens[behind] - 1, read)
        rows = np.flatnonzero(tandem & (lens > self.folded[slots]))
        if rows.size:
            self._advance(slots[rows], newest.index_select(0, self.to_device(rows)))
            self.folded[slots[rows]] = lens[rows]
        idx = self.to_device(slots)
        senior = self.table.author[idx] | self.to_device(self.solo[slots])
        receivers = self.junior_solo[slots]
        if receivers.any():  # host flags: a step without a junior-solo row uploads nothing more
            senior &= ~self.to_device(receivers)
        return senior

    def _fold_span(self, slots: np.ndarray, starts: np.ndarray, ends: np.ndarray, read: SpanReader) -> None:
        """Fold output tokens [start, end) of each slot, one batched `advance` per position."""
        tokens = read(slots, starts, ends)
        counts = ends - starts
        for i in range(int(counts.max())):
            live = np.flatnonzero(counts > i)
            self._advance(slots[live], tokens[self.to_device(live), i])
        self.folded[slots] = ends

    def _advance(self, slots: np.ndarray, tokens: torch.Tensor) -> None:
        """One fold over `slots` (distinct) with one token each, on the device, each with the coin drawn ahead."""
        idx = self.to_device(slots)
        named = None if self.authors_ahead is None else self.authors_ahead[idx, self.table.coin[idx]]
        self.table.fold(idx, tokens, named)

    def to_device(self, values: np.ndarray) -> torch.Tensor:
        """A host array on the device: through pinned memory without blocking (a CUDA device), as is on the CPU."""
        t = torch.from_numpy(np.ascontiguousarray(values))
        if self.device.type == "cpu":
            return t
        return t.pin_memory().to(self.device, non_blocking=True)
