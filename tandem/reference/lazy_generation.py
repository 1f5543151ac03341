"""The reference engine's `lazy` decoding loop: only a row's author reads its tokens.

The other model catches up in one multi-token forward when it next writes, or when its lag
on the row reaches `max_lag`. The bookkeeping it shares with the lockstep loop (token
buffer, KV caches, authorship state, outputs) is `tandem.reference.generation.Generation`'s.
"""

from __future__ import annotations

import torch

from tandem.reference.generation import JUNIOR, SENIOR, Generation, GenerationContext, Rows, progress_bar
from tandem.process.authorship import advance
from tandem.rollout.sampling import sample_tokens, token_logprobs


class LazyGeneration(Generation):
    """Only a row's author ingests its tokens; the other model catches up when it next writes.

    Rows are grouped per author, so each model runs at most one batched forward per step.
    A model whose lag on a row reaches `max_lag` catches up even if it is not the author.
    """

    def __init__(self, context: GenerationContext, prompts, sampling, keys, decoders):
        super().__init__(context, prompts, sampling, keys, decoders)
        B = len(prompts)
        self.total_len = self.prompt_len.clone()
        self.last_logits = torch.zeros(2, B, context.vocab_size, dtype=decoders[0].dtype, device=self.seq.device)
        self.offsets = torch.arange(self.capacity, device=self.seq.device)
        self.max_prompt = int(self.prompt_len.max())

    def run(self, progress: bool = False) -> None:
        bar = progress_bar(self.sampling.max_new_tokens, progress)
        active = torch.ones_like(self.row_ids, dtype=torch.bool)
        rows = Rows(self.row_ids, every=True)
        for t in range(self.sampling.max_new_tokens):
            done = self._step(t, rows)
            bar.update(1)
            if done is not None:
                active[rows.ids[done]] = False
                rows = self._rows(active.nonzero().squeeze(1))
                if len(rows) == 0:
                    break
        bar.close()
        # Catch up on tokens never seen, so every reported log-prob is filled (the junior's only when asked).
        for m in (SENIOR, JUNIOR) if self._reports_junior else (SENIOR,):
            behind = (self.caches[m].lengths < self.total_len - 1).nonzero().squeeze(1)
            if behind.numel():
                self._ingest(m, self._rows(behind))

    def _rows(self, ids: torch.Tensor) -> Rows:
        return Rows.of(ids, self.row_ids.numel())

    def _step(self, t: int, rows: Rows) -> torch.Tensor | None:
        """The authors catch up and write one token per live row; the coins pick the next authors."""
        at = rows.at
        author = self.state.author[at]
        fresh = torch.stack([author, ~author])  # [2, b]: which model has logits for this token
        # A lag is at most the prompt plus the tokens so far: check the bound once it can bind.
        lag_binds = self.context.max_lag is not None and self.max_prompt + t >= self.context.max_lag
        if lag_binds:
            lengths = torch.stack([cache.lengths[at] for cache in self.caches])
            fresh |= self.total_len[at] - lengths >= self.context.max_lag
            counts = fresh.sum(1).tolist()
        else:
            n_senior = int(author.sum())
            counts = [n_senior, len(rows) - n_senior]
        for m, n in enumerate(counts):
            if n:
                self._ingest(m, rows if n == len(rows) else self._rows(rows.ids[fresh[m]]))
        logits = self.last_logits[:, at]
        own = torch.where(author[:, None], logits[SENIOR], logits[JUNIOR])
        tokens = sample_tokens(own, self.sampling, self.uniforms[at, t])
        if lag_binds:  # a model forced to catch up by the lag bound has this token's log-prob too
            lp = token_logprobs(logits, tokens.expand(2, -1), self.sampling.logprob_temperature)
        else:
            lp = token_logprobs(own, tokens, self.sampling.logprob_temperature).expand(2, -1)
        self.logprobs[:, at, t] = torch.where(fresh, lp.to(torch.float64), float("nan"))  # stale: filled later
        self._record(rows, tokens, author, t)
        self.total_len[at] += 1
        done = self._finished(rows, tokens, t)
        if not rows.every:  # the coins advance over the whole batch
            tokens = torch.zeros_like(self.keys).index_put_((rows.ids,), tokens)
        self.state = advance(self.context.tandem, self.context.is_boundary, self.state, tokens)
        return done

    def _ingest(self, m: int, rows: Rows) -> None:
        """Feed model m every token of `rows` it has not seen; refresh its next-token logits."""
        dec, cache, at = self.decoders[m], self.caches[m], rows.at
        start = cache.lengths[at]
        n_new = self.total_len[at] - start
        shortest, L = (int(n) for n in torch.aminmax(n_new))
        if L == 1:  # the common case: the token just emitted
            hidden = dec.forward(cache, rows.subset, self.seq[rows.ids, start][:, None])[0]
            self.forward_calls += 1
            self.last_logits[m, at] = dec.logits(hidden[None])[0]
            return
        pos = start[:, None] + self.offsets[None, :L]
        chunk = self.seq[rows.ids[:, None], pos.clamp(max=self.capacity - 1)]
        ragged = n_new if shortest < L else None  # equal chunks need no padding
        hidden = dec.forward(cache, rows.subset, chunk, ragged)[0]  # [N, hidden], row by row
        self.forward_calls += 1
        last = n_new.cumsum(0) - 1
        self.last_logits[m, at] = dec.logits(hidden[None, last])[0]
        # Tokens inside a catch-up chunk predict tokens already emitted by the other model.
        valid = self.offsets[None, :L] < n_new[:, None]
        row_of, pos = rows.ids[:, None].expand(-1, L)[valid], pos[valid]
        resp = pos + 1 - self.prompt_len[row_of]  # response index of the predicted token
        known = resp >= 0
        known[last] = False
        lp = token_logprobs(dec.logits(hidden[None, known])[0], self.seq[row_of[known], pos[known] + 1],
                            self.sampling.logprob_temperature)
        self.logprobs[m, row_of[known], resp[known]] = lp.to(torch.float64)
