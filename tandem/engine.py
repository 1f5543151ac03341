"""The reference tandem engine: batched co-generation by a senior and a junior in PyTorch.

Each model has its own KV cache (`tandem.decoder`). Before every token, the tandem
process (`tandem.process`) has already chosen each row's author, so each row samples from
its author's distribution only. Two decoding modes give identical tokens and masks:

- `lockstep`: both models ingest every token as it is emitted (two forwards per step).
- `lazy`: only a row's current author runs for it; the other model ingests the tokens it
  missed in one multi-token forward when it next becomes that row's author (or when its
  lag reaches `max_lag`). Rows are grouped per author, so each model runs at most one
  batched forward per step; finished rows leave the batch.

Solo mode runs the senior alone. Per row the engine returns token ids, the authorship
mask, the senior's and the junior's log-probability of every emitted token (missing ones
are filled by a final catch-up), and the finish reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from tandem.boundaries import config_boundary_lookup
from tandem.coins import request_key, sample_uniform
from tandem.config import TandemConfig
from tandem.decoder import CachedDecoder
from tandem.errors import TandemError
from tandem.models import check_same_model_vocab, check_same_vocab, context_length
from tandem.process import advance, start_state
from tandem.sampling import SamplingConfig, sample_tokens, token_logprobs

MODES = ("lockstep", "lazy")
SENIOR, JUNIOR = 0, 1


@dataclass
class Rollout:
    prompt_ids: list[int]
    token_ids: list[int]
    authorship_mask: list[int]  # 1 = the senior wrote the token
    senior_logprobs: list[float]
    junior_logprobs: list[float] | None  # None in solo mode
    finish_reason: str  # "stop" (EOS or stop string) | "length"
    text: str
    request_key: int

    @property
    def senior_fraction(self) -> float:
        return sum(self.authorship_mask) / max(1, len(self.authorship_mask))

    @property
    def n_switches(self) -> int:
        m = self.authorship_mask
        return sum(a != b for a, b in zip(m, m[1:]))


class TandemEngine:
    """Senior + junior co-generation (or the senior solo) with the reference decoder."""

    def __init__(self, senior, junior, tokenizer, tandem: TandemConfig | None = None,
                 junior_tokenizer=None, mode: str = "lockstep", max_lag: int | None = 256):
        if mode not in MODES:
            raise TandemError(f"unknown engine mode {mode!r}; choose one of {', '.join(MODES)}")
        self.tandem, self.tokenizer, self.mode, self.max_lag = tandem or TandemConfig(), tokenizer, mode, max_lag
        self.decoders = [CachedDecoder(senior)]
        self.context = context_length(senior)
        self.is_boundary = None
        if junior is not None:
            if junior_tokenizer is not None:
                check_same_vocab(tokenizer, junior_tokenizer)
            check_same_model_vocab(senior, junior)
            self.decoders.append(CachedDecoder(junior))
            self.context = min(self.context, context_length(junior))
            self.is_boundary = config_boundary_lookup(
                self.tandem, tokenizer, self.decoders[0].vocab_size, self.decoders[0].device
            )
        self.device = self.decoders[0].device
        self.vocab_size = self.decoders[0].vocab_size
        self.last_forward_calls = 0

    def eos_ids(self, sampling: SamplingConfig) -> list[int]:
        if sampling.eos_token_ids is not None:
            return list(sampling.eos_token_ids)
        ids = {self.tokenizer.eos_token_id}
        gen = getattr(self.decoders[0].model, "generation_config", None)
        extra = getattr(gen, "eos_token_id", None)
        ids.update(extra if isinstance(extra, (list, tuple)) else [extra])
        return sorted(i for i in ids if i is not None)

    def generate(self, prompts: list[list[int]], sampling: SamplingConfig, request_keys: list[int] | None = None,
                 solo: bool = False, progress: bool = False) -> list[Rollout]:
        """Generate one response per prompt (token id lists of any lengths)."""
        if not solo and len(self.decoders) < 2:
            raise TandemError("tandem generation needs a junior model; pass one, or generate solo")
        self.check_prompts(prompts, sampling)
        keys = request_keys if request_keys is not None else [request_key("row", i) for i in range(len(prompts))]
        if len(keys) != len(prompts):
            raise TandemError(f"{len(keys)} request keys for {len(prompts)} prompts; pass one key per prompt")
        generation = _Generation(self, prompts, sampling, keys, solo)
        rollouts = generation.run(progress)
        self.last_forward_calls = generation.forward_calls  # model forwards of the last call (benchmarks)
        return rollouts

    def check_prompts(self, prompts, sampling: SamplingConfig) -> None:
        """Raise a `TandemError` for prompts the engine cannot serve (empty, out of vocab, too long)."""
        if not prompts:
            raise TandemError("no prompts given")
        for i, p in enumerate(prompts):
            if not p:
                raise TandemError(f"prompt {i} is empty; every prompt needs at least one token")
            if min(p) < 0 or max(p) >= self.vocab_size:
                raise TandemError(f"prompt {i} has token ids outside the model's vocabulary [0, {self.vocab_size})")
            if len(p) + sampling.max_new_tokens > self.context:
                raise TandemError(
                    f"prompt {i} has {len(p)} tokens; with max_new_tokens={sampling.max_new_tokens} that exceeds "
                    f"the model's context of {self.context}; shorten the prompt or lower max_new_tokens"
                )


class _Generation:
    """The state of one `generate` call: token buffer, caches, authorship, log-probs."""

    def __init__(self, engine: TandemEngine, prompts, sampling: SamplingConfig, keys, solo: bool):
        self.e, self.s, self.solo = engine, sampling, solo
        dev, B, T = engine.device, len(prompts), sampling.max_new_tokens
        self.prompt_len = torch.tensor([len(p) for p in prompts], device=dev)
        cap = int(self.prompt_len.max()) + T
        self.seq = torch.zeros(B, cap, dtype=torch.int64, device=dev)
        for i, p in enumerate(prompts):
            self.seq[i, : len(p)] = torch.tensor(p, device=dev)
        self.total_len = self.prompt_len.clone()
        self.keys = torch.tensor(keys, dtype=torch.int64, device=dev)
        self.models = [SENIOR] if solo else [SENIOR, JUNIOR]
        self.caches = [engine.decoders[m].new_cache(B, cap) for m in self.models]
        self.last_logits = [None] * len(self.models)
        self.fresh = torch.zeros(len(self.models), B, dtype=torch.bool, device=dev)
        self.logprobs = torch.full((len(self.models), B, T), float("nan"), dtype=torch.float64, device=dev)
        self.mask = torch.zeros(B, T, dtype=torch.int64, device=dev)
        self.active = torch.ones(B, dtype=torch.bool, device=dev)
        self.n_emitted = torch.zeros(B, dtype=torch.int64, device=dev)
        self.finish = [None] * B
        self.eos = torch.tensor(engine.eos_ids(sampling), dtype=torch.int64, device=dev)
        self.state = None if solo else start_state(engine.tandem, self.keys)
        self.forward_calls = 0

    def run(self, progress: bool) -> list[Rollout]:
        bar = tqdm(total=self.s.max_new_tokens, desc="rollout", unit="tok", disable=not progress, leave=False)
        for t in range(self.s.max_new_tokens):
            self._step(t)
            bar.update(1)
            if not bool(self.active.any()):
                break
        bar.close()
        self._complete_logprobs()
        return self._rollouts()

    def _senior_writes(self, rows: torch.Tensor) -> torch.Tensor:
        if self.solo:
            return torch.ones(rows.numel(), dtype=torch.bool, device=rows.device)
        return self.state.author[rows]

    def _rows_needing(self, m: int, rows: torch.Tensor, senior_writes: torch.Tensor) -> torch.Tensor:
        if self.solo or self.e.mode == "lockstep":
            return rows
        need = senior_writes if m == SENIOR else ~senior_writes
        if self.e.max_lag is not None:  # bound the catch-up chunk of the non-author
            lag = self.total_len[rows] - self.caches[m].lengths.to(rows.device)[rows]
            need = need | (lag >= self.e.max_lag)
        return rows[need]

    def _step(self, t: int) -> None:
        rows = self.active.nonzero().squeeze(1)
        senior_writes = self._senior_writes(rows)
        for m in self.models:
            need = self._rows_needing(m, rows, senior_writes)
            if need.numel():
                self._ingest(m, need)
        logits = self._author_logits(rows, senior_writes)
        u = sample_uniform(self.s.seed, self.keys[rows], self.n_emitted[rows])
        tokens = sample_tokens(logits, self.s, u)
        self._record_logprobs(rows, tokens, t)
        self.seq[rows, self.total_len[rows]] = tokens
        self.mask[rows, t] = senior_writes.long()
        self.total_len[rows] += 1
        self.n_emitted[rows] += 1
        self._finish_rows(rows, tokens, t)
        if not self.solo:
            all_tokens = torch.zeros_like(self.keys)
            all_tokens[rows] = tokens
            self.state = advance(self.e.tandem, self.e.is_boundary, self.state, all_tokens)

    def _author_logits(self, rows: torch.Tensor, senior_writes: torch.Tensor) -> torch.Tensor:
        """Each row's next-token logits from the model that writes its next token."""
        if self.solo or bool(senior_writes.all()):
            return self.last_logits[SENIOR][rows]
        if not bool(senior_writes.any()):
            return self.last_logits[JUNIOR][rows]
        return torch.where(senior_writes[:, None], self.last_logits[SENIOR][rows], self.last_logits[JUNIOR][rows])

    def _ingest(self, m: int, rows: torch.Tensor) -> None:
        """Feed model m every token of `rows` it has not seen; refresh its next-token logits."""
        dec, cache = self.e.decoders[m], self.caches[m]
        start = cache.lengths.to(rows.device)[rows]
        n_new = self.total_len[rows] - start
        L = int(n_new.max())
        offsets = torch.arange(L, device=rows.device)
        idx = (start[:, None] + offsets[None, :]).clamp(max=self.seq.shape[1] - 1)
        chunk = torch.gather(self.seq[rows], 1, idx)
        hidden = dec.forward(cache, rows.to(dec.device), chunk.to(dec.device), n_new.to(dec.device))
        hidden = hidden.to(self.seq.device)
        self.forward_calls += 1
        b = torch.arange(rows.numel(), device=rows.device)
        self._set_last_logits(m, rows, dec.logits(hidden[b, n_new - 1]))
        # Positions inside the chunk predict tokens already emitted by the other model.
        resp_idx = start[:, None] + offsets[None, :] + 1 - self.prompt_len[rows][:, None]
        known = (offsets[None, :] < (n_new - 1)[:, None]) & (resp_idx >= 0)
        if bool(known.any()):
            nxt = torch.gather(self.seq[rows], 1, (idx + 1).clamp(max=self.seq.shape[1] - 1))
            lp = token_logprobs(dec.logits(hidden[known]), nxt[known], self.s.logprob_temperature)
            row_ids = rows[:, None].expand_as(known)[known]
            self.logprobs[m, row_ids, resp_idx[known]] = lp.to(torch.float64)

    def _set_last_logits(self, m: int, rows: torch.Tensor, logits: torch.Tensor) -> None:
        if self.last_logits[m] is None:
            B = self.seq.shape[0]
            self.last_logits[m] = torch.zeros(B, logits.shape[-1], dtype=logits.dtype, device=logits.device)
        self.last_logits[m][rows] = logits
        self.fresh[m, rows] = True

    def _record_logprobs(self, rows: torch.Tensor, tokens: torch.Tensor, t: int) -> None:
        for m in self.models:
            fresh = self.fresh[m, rows]
            if bool(fresh.any()):
                r = rows[fresh]
                lp = token_logprobs(self.last_logits[m][r], tokens[fresh], self.s.logprob_temperature)
                self.logprobs[m, r, t] = lp.to(torch.float64)
        self.fresh[:, rows] = False

    def _finish_rows(self, rows: torch.Tensor, tokens: torch.Tensor, t: int) -> None:
        done_eos = torch.isin(tokens, self.eos)
        done_len = torch.full_like(done_eos, t + 1 >= self.s.max_new_tokens)
        for i, r in enumerate(rows.tolist()):
            if bool(done_eos[i]) or (self.s.stop_strings and self._hit_stop_string(r)):
                self.finish[r] = "stop"
            elif bool(done_len[i]):
                self.finish[r] = "length"
        finished = torch.tensor([self.finish[r] is not None for r in rows.tolist()], device=rows.device)
        self.active[rows[finished]] = False

    def _hit_stop_string(self, r: int) -> bool:
        longest = max(len(s.encode()) for s in self.s.stop_strings)
        n, start = int(self.n_emitted[r]), int(self.prompt_len[r])
        tail = self.seq[r, start + max(0, n - longest - 2) : start + n].tolist()
        text = self.e.tokenizer.decode(tail, skip_special_tokens=False)
        return any(s in text for s in self.s.stop_strings)

    def _complete_logprobs(self) -> None:
        """Let each model catch up on tokens it never saw, so every log-prob is filled."""
        for m in self.models:
            rows = (self.caches[m].lengths.to(self.seq.device) < self.total_len - 1).nonzero().squeeze(1)
            if rows.numel():
                self._ingest(m, rows)

    def _rollouts(self) -> list[Rollout]:
        out = []
        for r in range(self.seq.shape[0]):
            n, p = int(self.n_emitted[r]), int(self.prompt_len[r])
            ids = self.seq[r, p : p + n].tolist()
            text = self.e.tokenizer.decode(ids, skip_special_tokens=True)
            if self.finish[r] == "stop" and self.s.stop_strings:
                cut = min((text.find(s) for s in self.s.stop_strings if s in text), default=-1)
                text = text[:cut] if cut >= 0 else text
            out.append(Rollout(
                prompt_ids=self.seq[r, :p].tolist(),
                token_ids=ids,
                authorship_mask=self.mask[r, :n].tolist() if not self.solo else [1] * n,
                senior_logprobs=self.logprobs[SENIOR, r, :n].tolist(),
                junior_logprobs=None if self.solo else self.logprobs[JUNIOR, r, :n].tolist(),
                finish_reason=self.finish[r] or "length",
                text=text,
                request_key=int(self.keys[r]),
            ))
        return out
