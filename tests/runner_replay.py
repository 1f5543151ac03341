"""A replay of the persistent-batch sequence vLLM's V1 GPU model runner produces under async scheduling.

Shared by `tests/test_vllm_gpu_paths.py` (the batch state alone, main suite) and
`tests/test_scale_vllm_gpu_paths.py` (the real `TandemLogitsProcessor`, scale lane).
Each step follows `GPUModelRunner._update_states` / `_sample` and `InputBatch` in vLLM
0.24 and 0.28 (v1/worker/gpu_model_runner.py, gpu_input_batch.py, the same in both):

1. finished and unscheduled (preempted) requests leave the batch (`remove_request`);
2. a resumed request's token list is rebuilt from the scheduler's tokens - a *new* list
   object, no placeholder - and it is added into the lowest freed row (`add_request`);
   new requests likewise, with an empty list;
3. `condense` slides the last rows into the freed ones (UNIDIRECTIONAL moves);
4. `_may_reorder_batch` (FlashInfer and other backends that split decodes from
   prefills, GPU only) swaps rows so that decodes come first (SWAP moves);
5. `refresh_metadata` hands the BatchUpdate to the processor (`update_state`);
6. the model runs (`forward`, `compute_logits`) - here: `on_forward(rows)`;
7. `_sample`: `update_async_output_token_ids` replaces each row's trailing `-1` with the
   token sampled for it in the previous step (by the request's previous row), then the
   processor's `apply` runs and picks the author - here: `authors_now()`;
8. after sampling, every row not in a partial (chunked) prefill gets a `-1` placeholder
   appended; its real token arrives with the next step.

Sometimes, as after a KV-load failure, `_update_states` cuts a request's tokens back
(`del output_token_ids[num_output_tokens:]`) and generation continues from there.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from types import SimpleNamespace as NS

PLACEHOLDER = -1
UNIDIRECTIONAL, SWAP = NS(name="UNIDIRECTIONAL"), NS(name="SWAP")


@dataclass
class Req:
    rid: str
    extra_args: dict
    prefill_steps: int  # steps of chunked prefill left (no token sampled for those)
    tokens: list[int] = field(default_factory=list)  # the runner's req_state.output_token_ids
    authors: list[int] = field(default_factory=list)  # author the processor picked per emitted token


class RunnerReplay:
    """Drives a processor-like object the way vLLM's runner does; see the module docstring.

    `update_state(batch_update)` and `authors_now() -> list[int]` (1 = senior, per row) are
    the processor's side; `on_forward(rows)` is called where the model runs.
    """

    def __init__(self, update_state, authors_now, rng: random.Random, vocab: int, on_forward=None):
        self.update_state, self.authors_now, self.on_forward = update_state, authors_now, on_forward
        self.rng, self.vocab = rng, vocab
        self.rows: list[Req | None] = []
        self.removed: list[int] = []
        self.added, self.moved = [], []
        self.prev_index: dict[str, int] = {}  # rid -> row in the previous step
        self.sampled_prev: dict[int, int] = {}  # previous row -> token sampled there
        self.parked: list[Req] = []
        self.swaps = self.truncations = self.resumes = 0

    # --- InputBatch ---------------------------------------------------------------------

    def _remove(self, req: Req) -> None:
        index = self.rows.index(req)
        self.rows[index] = None
        self.removed.append(index)
        self.prev_index.pop(req.rid, None)  # remove_request drops it from prev_req_id_to_index

    def _add(self, req: Req) -> None:
        if self.removed:
            index = min(self.removed)
            self.removed.remove(index)
            self.rows[index] = req
        else:
            index = len(self.rows)
            self.rows.append(req)
        self.added.append((index, NS(extra_args=req.extra_args), [1, 2, 3], req.tokens))

    def _condense(self) -> None:
        empties = sorted(self.removed)
        last = len(self.rows) - 1
        for empty in empties:
            while last >= 0 and self.rows[last] is None:
                last -= 1
            if empty >= last:
                break
            self.rows[empty], self.rows[last] = self.rows[last], None
            self.moved.append((last, empty, UNIDIRECTIONAL))
            last -= 1
        while self.rows and self.rows[-1] is None:
            self.rows.pop()
        self.removed = []

    def _reorder_decodes_first(self) -> None:
        """reorder_batch_to_split_decodes_and_prefills: swap prefills at the front with decodes at the back."""
        is_decode = [r.prefill_steps == 0 for r in self.rows]
        front, back = 0, len(self.rows) - 1
        while front < back:
            if is_decode[front]:
                front += 1
            elif not is_decode[back]:
                back -= 1
            else:
                self.rows[front], self.rows[back] = self.rows[back], self.rows[front]
                is_decode[front], is_decode[back] = True, False
                self.moved.append((front, back, SWAP))
                self.swaps += 1

    # --- one engine step ------------------------------------------------------------------

    def step(self, new: list[Req], preempt: int = 0, finish: int = 0, resume: bool = False, cut: bool = False):
        live = [r for r in self.rows if r is not None]
        for req in self.rng.sample(live, min(finish, len(live))):
            self._remove(req)
            live.remove(req)
        for req in self.rng.sample(live, min(preempt, len(live))):
            self._remove(req)
            self.parked.append(req)
        if resume and self.parked:
            req = self.parked.pop(0)
            if req.tokens and req.tokens[-1] == PLACEHOLDER:  # the scheduler waits for the token first
                req.tokens[-1] = self.rng.randrange(self.vocab)
            req.tokens = list(req.tokens)  # resumed_token_ids[-num_output_tokens:]: a new list object
            self._add(req)
            self.resumes += 1
        for req in new:
            self._add(req)
        self._condense()
        self._reorder_decodes_first()
        if cut:  # a KV-load failure: tokens past num_output_tokens are dropped
            candidates = [r for r in self.rows if len([t for t in r.tokens if t != PLACEHOLDER]) >= 3]
            if candidates:
                req = self.rng.choice(candidates)
                keep = self.rng.randrange(1, len(req.tokens) - 1)
                del req.tokens[keep:]
                del req.authors[keep:]
                self.truncations += 1
        self.update_state(NS(batch_size=len(self.rows), removed=[], added=self.added, moved=self.moved))
        self.added, self.moved = [], []
        if self.on_forward is not None:
            self.on_forward(len(self.rows))
        for row, req in enumerate(self.rows):  # update_async_output_token_ids
            prev = self.prev_index.get(req.rid)
            if prev is None or not req.tokens or req.tokens[-1] != PLACEHOLDER:
                continue
            req.tokens[-1] = self.sampled_prev[prev]
        authors = self.authors_now()
        self.sampled_prev, self.prev_index = {}, {}
        for row, req in enumerate(self.rows):
            self.prev_index[req.rid] = row
            if req.prefill_steps > 0:  # a partial prefill: its sampled token is discarded
                req.prefill_steps -= 1
                continue
            req.authors.append(int(authors[row]))
            req.tokens.append(PLACEHOLDER)
            self.sampled_prev[row] = self.rng.randrange(self.vocab)

    def finish(self) -> list[Req]:
        """Every request seen, with its last placeholder resolved."""
        reqs = [r for r in self.rows if r is not None] + self.parked + getattr(self, "_done", [])
        for req in reqs:
            if req.tokens and req.tokens[-1] == PLACEHOLDER:
                req.tokens[-1] = self.rng.randrange(self.vocab)
        return reqs


def run_random_schedule(sim: RunnerReplay, make_req, steps: int = 150) -> list[Req]:
    """A random schedule: arrivals (some with chunked prefill), finishes, preemptions, resumes, cuts."""
    rng, seen, next_id = sim.rng, [], 0
    for _ in range(steps):
        new = []
        if sum(r is not None for r in sim.rows) < 7 and rng.random() < 0.4:
            new.append(make_req(f"r{next_id}", prefill_steps=rng.choice([0, 1, 2, 3])))
            seen.append(new[-1])
            next_id += 1
        live = sum(r is not None for r in sim.rows)
        sim.step(new, preempt=int(live > 2 and rng.random() < 0.1), finish=int(live > 3 and rng.random() < 0.2),
                 resume=rng.random() < 0.3, cut=rng.random() < 0.05)
    sim.finish()
    for req in seen:
        if req.tokens and req.tokens[-1] == PLACEHOLDER:
            req.tokens[-1] = rng.randrange(sim.vocab)
    return seen
