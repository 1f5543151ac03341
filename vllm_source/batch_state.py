"""Per-request authorship state of vLLM's persistent batch, indexed by batch row.

vLLM V1 tells a logits processor how its batch changes through `BatchUpdate`s (rows
removed, added, moved or swapped) and hands it, per added request, a live reference to
the request's output-token list. This module keeps one authorship state per row (the shared
`vllm_source.author_table.AuthorTable`), follows vLLM's moves of requests between rows, and
folds newly emitted tokens into it (batched over rows).
It imports no vLLM: the batch updates are duck-typed, so CPU tests drive it directly.

Tokens are folded in `catch_up`, which the processor calls inside `apply` - not in
`update_state` - because under vLLM's async scheduling the newest output token is still
a `-1` placeholder when `update_state` runs; vLLM fills it in just before sampling.
"""

from __future__ import annotations

import torch

from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from vllm_source.author_table import AuthorTable
from vllm_source.requests import is_junior_solo, parse_tandem_extra_args

PLACEHOLDER = -1  # vLLM's async-scheduling stand-in for a token still being copied back


def _is_swap(direction) -> bool:
    """vLLM's MoveDirectionality.SWAP, recognised by name so vLLM need not be imported."""
    return getattr(direction, "name", direction) == "SWAP"


class TandemBatchState:
    """Authorship state (the author table) and the solo and junior-solo flags of each batch row, on the host.

    A solo row is the senior's, a junior-solo row the junior's, at every token; neither folds tokens.
    """

    def __init__(self, cfg: TandemConfig, is_boundary: torch.Tensor | None, max_num_reqs: int):
        n = max_num_reqs
        self.table = AuthorTable(cfg, is_boundary, n)
        self.solo = torch.zeros(n, dtype=torch.bool)
        self.junior_solo = torch.zeros(n, dtype=torch.bool)
        self.outputs: list[list[int] | None] = [None] * n  # live references owned by vLLM
        self.consumed = [0] * n  # output tokens already folded into the state
        self.batch_size = 0

    # --- batch makeup -------------------------------------------------------------------

    def update(self, batch_update) -> None:
        """Apply one `BatchUpdate` (None = no change), in vLLM's order: removed, added, moved."""
        if batch_update is None:
            return
        for index in batch_update.removed:
            self._clear(index)
        for index, params, _prompt_ids, output_ids in batch_update.added:
            self._add(index, getattr(params, "extra_args", None), output_ids)
        for a, b, direction in batch_update.moved:
            self._move(a, b, swap=_is_swap(direction))
        self.batch_size = batch_update.batch_size

    def _add(self, index: int, extra_args: dict | None, output_ids: list[int]) -> None:
        key, solo = parse_tandem_extra_args(extra_args)
        self.table.start(torch.tensor([index]), torch.tensor([key]))
        self.solo[index] = solo
        self.junior_solo[index] = is_junior_solo(extra_args)
        # A resumed (preempted) request arrives with its tokens so far; `catch_up` replays them.
        self.outputs[index], self.consumed[index] = output_ids, 0

    def _clear(self, index: int) -> None:
        self.outputs[index], self.consumed[index] = None, 0

    def _move(self, a: int, b: int, swap: bool) -> None:
        for t in (*self.table.tensors(), self.solo, self.junior_solo):
            ta, tb = t[a].clone(), t[b].clone()
            t[b] = ta
            if swap:
                t[a] = tb
        if swap:
            self.outputs[a], self.outputs[b] = self.outputs[b], self.outputs[a]
            self.consumed[a], self.consumed[b] = self.consumed[b], self.consumed[a]
        else:
            self.outputs[b], self.consumed[b] = self.outputs[a], self.consumed[a]
            self._clear(a)

    # --- tokens -------------------------------------------------------------------------

    def _restart(self, row: int) -> None:
        """Back to the request's start state, to replay its tokens from the first."""
        self.table.start(torch.tensor([row]), self.table.keys[row : row + 1].clone())
        self.consumed[row] = 0

    def _new_tokens(self, row: int) -> int:
        """How many emitted tokens of `row` are not folded in yet (placeholders excluded)."""
        out = self.outputs[row]
        if out is None or self.fixed_author(row):
            return 0
        if len(out) < self.consumed[row]:
            # vLLM cut tokens we had folded in (a KV-load failure: `_update_states` deletes
            # output_token_ids past num_output_tokens); the state is a pure function of the
            # tokens, so replay the row from its start.
            self._restart(row)
        end = len(out)
        while end > self.consumed[row] and out[end - 1] == PLACEHOLDER:
            end -= 1
        if PLACEHOLDER in out[self.consumed[row] : end]:
            raise TandemError(f"batch row {row}: a placeholder token sits between real tokens; cannot replay")
        return end - self.consumed[row]

    def pending_placeholders(self) -> list[int]:
        """Rows whose newest token is still a placeholder (its value decides the next author)."""
        rows = []
        for row in range(self.batch_size):
            out = self.outputs[row]
            if out is not None and not self.fixed_author(row) and len(out) > self.consumed[row] \
                    and out[-1] == PLACEHOLDER:
                rows.append(row)
        return rows

    def catch_up(self) -> None:
        """Fold every newly emitted token of every row into its state, batched over rows."""
        todo = {r: n for r in range(self.batch_size) if (n := self._new_tokens(r)) > 0}
        while todo:
            rows = sorted(todo)
            tokens = torch.tensor([self.outputs[r][self.consumed[r]] for r in rows], dtype=torch.int64)
            self.table.fold(torch.tensor(rows, dtype=torch.int64), tokens)
            for r in rows:
                self.consumed[r] += 1
                todo[r] -= 1
                if todo[r] == 0:
                    del todo[r]

    def fixed_author(self, row: int) -> bool:
        """One author writes every token of the row (solo or junior solo): no coin, nothing to fold."""
        return bool(self.solo[row] or self.junior_solo[row])

    def all_solo(self) -> bool:
        """True when the batch has rows and every one is solo."""
        return self.batch_size > 0 and bool(self.solo[: self.batch_size].all())

    def senior_rows(self) -> torch.Tensor:
        """BoolTensor[batch_size]: True where the senior writes this step's token."""
        n = self.batch_size
        return (self.table.author[:n] | self.solo[:n]) & ~self.junior_solo[:n]
