"""One `TandemEngine.generate` call: the decoding loops of the reference engine.

A generation owns the token buffer, the KV caches (one per decoder), the authorship
state and the outputs (authorship mask, each model's log-probabilities, finish reasons).
Two loops share that bookkeeping:

- `LockstepGeneration` (solo, `paired`, `lockstep`): every model ingests every emitted
  token, so all live rows advance together and each decoder runs one single-token
  forward per step. Finished rows leave the batch: their cache rows are dropped once,
  so no forward ever gathers a subset of a cache.
- `LazyGeneration` (`lazy`, in `tandem.reference.lazy_generation`): only a row's author ingests its
  tokens; the other model catches up in one multi-token forward when it next writes (or its
  lag hits `max_lag`).

Both loops index per-row tensors through `Rows` (a slice while every row is live, the
row ids once one has finished). The sampling uniforms of every token are drawn up front
in one call (they are counter-based, so this is the same as drawing them per step), and
a step makes one host sync (has any row finished?) besides the decoder's own.

The engine hands a generation what it needs once, as a `GenerationContext`, and takes
back finished `Rollout`s; neither reads the other's internals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from tandem.process.coins import sample_uniform
from tandem.process.config import TandemConfig
from tandem.process.authorship import advance, start_state
from tandem.rollout.contract import Rollout, cut_at_stop
from tandem.rollout.sampling import SamplingConfig, sample_tokens, token_logprobs

SENIOR, JUNIOR = 0, 1


@dataclass(frozen=True)
class Rows:
    """The rows a step works on, and how per-row tensors are indexed with them.

    While every row is live the index is a slice (a view: no gather, no scatter); once a
    row has finished it is the sorted id tensor.
    """

    ids: torch.Tensor  # original row of each live row, sorted
    every: bool

    @classmethod
    def of(cls, ids: torch.Tensor, batch_size: int) -> "Rows":
        return cls(ids, ids.numel() == batch_size)

    @property
    def at(self) -> slice | torch.Tensor:
        return slice(None) if self.every else self.ids

    @property
    def subset(self) -> torch.Tensor | None:
        """What a decoder's `forward` takes: None for the whole batch."""
        return None if self.every else self.ids

    def __len__(self) -> int:
        return self.ids.numel()


@dataclass(frozen=True)
class GenerationContext:
    """What one generation takes from the engine that runs it."""

    tandem: TandemConfig  # who writes each token
    is_boundary: torch.Tensor | None  # the boundary lookup the strategy reads (None when unused)
    eos_ids: list[int]  # a row stops after emitting one of these
    vocab_size: int
    device: torch.device
    tokenizer: Any  # decodes stop-string tails and the rollout text
    max_lag: int | None = None  # lazy mode: a model this far behind on a row catches up
    junior_logprobs: bool = False  # also report the junior's log-probability of every emitted token


class Generation:
    """Shared state and bookkeeping; subclasses implement `run`'s decoding loop.

    `decoders`: [senior] (solo), [paired senior+junior] or [senior, junior].
    """

    def __init__(self, context: GenerationContext, prompts, sampling: SamplingConfig, keys, decoders):
        self.context, self.sampling, self.decoders = context, sampling, decoders
        dev, B, T = context.device, len(prompts), sampling.max_new_tokens
        self.n_models = sum(dec.M for dec in decoders)
        self.solo = self.n_models == 1
        self.prompt_len = torch.tensor([len(p) for p in prompts], device=dev)
        self.capacity = int(self.prompt_len.max()) + T
        self.seq = torch.zeros(B, self.capacity, dtype=torch.int64, device=dev)
        for i, p in enumerate(prompts):
            self.seq[i, : len(p)] = torch.tensor(p, device=dev)
        self.keys = torch.tensor(keys, dtype=torch.int64, device=dev)
        self.uniforms = sample_uniform(sampling.seed, self.keys[:, None], torch.arange(T, device=dev)[None])
        self.logprobs = torch.full((self.n_models, B, T), float("nan"), dtype=torch.float64, device=dev)
        self.mask = torch.zeros(B, T, dtype=torch.bool, device=dev)
        self.n_emitted = torch.zeros(B, dtype=torch.int64, device=dev)
        self.row_ids = torch.arange(B, device=dev)
        self.finish = [None] * B
        self.eos = torch.tensor(list(context.eos_ids) + list(sampling.stop_token_ids), dtype=torch.int64, device=dev)
        self.state = None if self.solo else start_state(context.tandem, self.keys, n_tokens=T)
        self.caches = [dec.begin(B, self.capacity) for dec in decoders]
        self.forward_calls = 0

    def close(self) -> None:
        for dec in self.decoders:
            dec.end()

    def rollouts(self) -> list[Rollout]:
        """The finished responses, one per prompt, in order."""
        return [self._rollout(r) for r in range(self.seq.shape[0])]

    def _rollout(self, r: int) -> Rollout:
        n, p = int(self.n_emitted[r]), int(self.prompt_len[r])
        ids = self.seq[r, p : p + n].tolist()
        text = cut_at_stop(self.context.tokenizer.decode(ids, skip_special_tokens=True), self.sampling.stop_strings,
                           self.finish[r] == "stop")
        return Rollout(
            prompt_ids=self.seq[r, :p].tolist(),
            token_ids=ids,
            authorship_mask=[1] * n if self.solo else self.mask[r, :n].long().tolist(),
            text=text,
            finish_reason=self.finish[r] or "length",
            request_key=int(self.keys[r]),
            senior_logprobs=self.logprobs[SENIOR, r, :n].tolist(),
            junior_logprobs=self.logprobs[JUNIOR, r, :n].tolist() if self._reports_junior else None,
        )

    @property
    def _reports_junior(self) -> bool:
        return not self.solo and self.context.junior_logprobs

    def _sample(self, logits: torch.Tensor, author: torch.Tensor | None, uniforms: torch.Tensor) -> torch.Tensor:
        """One token per row from its author's logits; `logits` [n_models, b, V], author [b] (True = senior)."""
        own = logits[SENIOR] if author is None else torch.where(author[:, None], logits[SENIOR], logits[JUNIOR])
        return sample_tokens(own, self.sampling, uniforms)

    def _record(self, rows: Rows, tokens: torch.Tensor, author: torch.Tensor | None, t: int) -> None:
        """Store the step's tokens and who wrote them (author None: solo)."""
        self.seq[rows.ids, self.prompt_len[rows.at] + t] = tokens
        self.n_emitted[rows.at] += 1
        if author is not None:
            self.mask[rows.at, t] = author

    def _finished(self, rows: Rows, tokens: torch.Tensor, t: int) -> torch.Tensor | None:
        """Record finish reasons; return a mask over `tokens` of rows that finished, or None if none did."""
        last = t + 1 >= self.sampling.max_new_tokens
        stop = torch.isin(tokens, self.eos)
        ids = rows.ids.tolist() if self.sampling.stop_strings else None
        if ids is not None:
            stop |= torch.tensor([self._hit_stop_string(r) for r in ids], device=stop.device)
        if not last and not bool(stop.any()):
            return None
        for r, hit in zip(ids or rows.ids.tolist(), stop.tolist()):
            if hit:
                self.finish[r] = "stop"
            elif last:
                self.finish[r] = "length"
        return torch.ones_like(stop) if last else stop

    def _hit_stop_string(self, r: int) -> bool:
        longest = max(len(s.encode()) for s in self.sampling.stop_strings)
        n, start = int(self.n_emitted[r]), int(self.prompt_len[r])
        tail = self.seq[r, start + max(0, n - longest - 2) : start + n].tolist()
        text = self.context.tokenizer.decode(tail, skip_special_tokens=False)
        return any(s in text for s in self.sampling.stop_strings)


class LockstepGeneration(Generation):
    """Every model ingests every token: one single-token forward per decoder per step."""

    def _forward(self, tokens: torch.Tensor, n_new: torch.Tensor | None) -> torch.Tensor:
        """Feed every live row to every decoder; return next-token logits [n_models, b, V]."""
        out = []
        for dec, cache in zip(self.decoders, self.caches):
            hidden = dec.forward(cache, None, tokens, n_new)  # [M, N, hidden]
            self.forward_calls += 1
            out.append(dec.logits(hidden if n_new is None else hidden[:, n_new.cumsum(0) - 1]))
        return out[0] if len(out) == 1 else torch.cat(out)

    def run(self, progress: bool = False) -> None:
        bar = progress_bar(self.sampling.max_new_tokens, progress)
        rows, uniforms, state = Rows(self.row_ids, every=True), self.uniforms, self.state  # cache row i = rows.ids[i]
        logits = self._forward(self.seq[:, : int(self.prompt_len.max())], self.prompt_len)  # read the prompts
        for t in range(self.sampling.max_new_tokens):
            # Each row's author writes a token; every model scored it, so its log-probs are known now.
            author = None if self.solo else state.author
            tokens = self._sample(logits, author, uniforms[:, t])
            m = self.n_models if self._reports_junior else 1  # the senior's always (the trainer reads them)
            lp = token_logprobs(logits[:m], tokens.expand(m, -1), self.sampling.logprob_temperature)
            self.logprobs[:m, rows.at, t] = lp.to(torch.float64)
            self._record(rows, tokens, author, t)
            if author is not None:  # the coin: who writes the next token
                state = advance(self.context.tandem, self.context.is_boundary, state, tokens)
            done = self._finished(rows, tokens, t)
            bar.update(1)
            if done is not None:  # finished rows leave the batch and every cache, once
                keep = (~done).nonzero().squeeze(1)
                if keep.numel() == 0:
                    break
                tokens, uniforms, rows = tokens[keep], uniforms[keep], Rows(rows.ids[keep], every=False)
                state = None if state is None else state.select(keep)
                for cache in self.caches:
                    cache.keep_rows(keep)
            logits = self._forward(tokens[:, None], None)  # every model reads the token
        bar.close()


class NoBar:
    def update(self, n):
        pass

    def close(self):
        pass


def progress_bar(total: int, progress: bool):
    """A tqdm bar, or a no-op (tqdm builds a multiprocessing lock even when disabled)."""
    if not progress:
        return NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="rollout", unit="tok", leave=False)
