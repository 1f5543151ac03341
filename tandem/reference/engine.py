"""The reference tandem engine: batched co-generation by a senior and a junior in PyTorch.

Each model has its own KV cache (`tandem.reference.decoder`). Before every token, the tandem
process (`tandem.process.authorship`) has already chosen each row's author, so each row samples from
its author's distribution only. Three decoding modes give identical tokens and masks, and
`auto` (the default) picks the fastest measured one per call: `lazy` for a single prompt,
else `paired` (model_spec/PERFORMANCE.md):

- `paired`: both models ingest every token as it is emitted, in ONE forward
  per step over their stacked weights (`CachedDecoder(senior, junior)`). It needs two
  models of identical configs (the paper's self-paired setting: the junior is the
  senior's pre-RL base); otherwise the engine falls back to `lockstep`.
- `lockstep`: both models ingest every token as it is emitted (two forwards per step).
- `lazy`: only a row's current author runs for it; the other model ingests the tokens it
  missed in one multi-token forward when it next becomes that row's author (or when its
  lag reaches `max_lag`). Rows are grouped per author, so each model runs at most one
  batched forward per step; finished rows leave the batch.

Solo mode runs the senior alone. Per row the engine returns token ids, the authorship
mask, the senior's log-probability of every emitted token (in lazy mode tokens the senior
never saw are filled by a final catch-up), the junior's only when asked
(`junior_logprobs=True`), and the finish reason. model_spec/PERFORMANCE.md has
the measurements behind the default.
"""

from __future__ import annotations

from tandem.process.boundaries import config_boundary_lookup
from tandem.process.coins import request_key
from tandem.process.config import ENGINE_MODES, TandemConfig
from tandem.reference.decoder import CachedDecoder
from tandem.reference.decoder_weights import same_architecture
from tandem.errors import TandemError
from tandem.reference.generation import GenerationContext, LockstepGeneration
from tandem.reference.lazy_generation import LazyGeneration
from tandem.models.loading import check_same_model_vocab, check_same_vocab, context_length
from tandem.rollout.contract import Rollout, check_request_keys
from tandem.rollout.sampling import SamplingConfig



class TandemEngine:
    """Senior + junior co-generation (or the senior solo) with the reference decoder."""

    def __init__(self, senior, junior, tokenizer, tandem: TandemConfig | None = None,
                 junior_tokenizer=None, mode: str = "auto", max_lag: int | None = 256):
        if mode not in ENGINE_MODES:
            raise TandemError(f"unknown engine mode {mode!r}; choose one of {', '.join(ENGINE_MODES)}")
        self.tandem, self.tokenizer, self.max_lag = tandem or TandemConfig(), tokenizer, max_lag
        self.senior = CachedDecoder(senior)
        self.context_length = context_length(senior)
        self.is_boundary, self.junior, self.paired = None, None, None
        if junior is not None:
            if junior_tokenizer is not None:
                check_same_vocab(tokenizer, junior_tokenizer)
            check_same_model_vocab(senior, junior)
            self.junior = CachedDecoder(junior)
            self.context_length = min(self.context_length, context_length(junior))
            self.is_boundary = config_boundary_lookup(
                self.tandem, tokenizer, self.senior.vocab_size, self.senior.device
            )
            if mode in ("auto", "paired") and same_architecture(senior, junior):
                self.paired = CachedDecoder(senior, junior)
        # `paired` needs identical configs; otherwise both models run their own forward.
        self.mode = "lockstep" if mode == "paired" and self.paired is None else mode
        self.device = self.senior.device
        self.vocab_size = self.senior.vocab_size
        self.last_forward_calls = 0
        self.last_mode = None  # the mode the last tandem `generate` decoded with

    def eos_ids(self, sampling: SamplingConfig) -> list[int]:
        if sampling.eos_token_ids is not None:
            return list(sampling.eos_token_ids)
        ids = {self.tokenizer.eos_token_id}
        gen = getattr(self.senior.models[0], "generation_config", None)
        extra = getattr(gen, "eos_token_id", None)
        ids.update(extra if isinstance(extra, (list, tuple)) else [extra])
        return sorted(i for i in ids if i is not None)

    def generate(self, prompts: list[list[int]], sampling: SamplingConfig, request_keys: list[int] | None = None,
                 solo: bool = False, progress: bool = False, junior_logprobs: bool = False) -> list[Rollout]:
        """Generate one response per prompt (token id lists of any lengths); `junior_logprobs` also
        reports the junior's log-probability of every emitted token (lazy mode then catches the
        junior up at the end)."""
        if not solo and self.junior is None:
            raise TandemError("tandem generation needs a junior model; pass one, or generate solo")
        self.check_prompts(prompts, sampling)
        keys = request_keys if request_keys is not None else [request_key("row", i) for i in range(len(prompts))]
        check_request_keys(keys, prompts)
        self.last_mode = None if solo else self.decoding_mode(len(prompts))
        context = GenerationContext(self.tandem, self.is_boundary, self.eos_ids(sampling), self.vocab_size,
                                    self.device, self.tokenizer, self.max_lag, junior_logprobs)
        if solo:
            generation = LockstepGeneration(context, prompts, sampling, keys, [self.senior])
        elif self.last_mode == "paired":
            generation = LockstepGeneration(context, prompts, sampling, keys, [self.paired])
        else:
            kind = LazyGeneration if self.last_mode == "lazy" else LockstepGeneration
            generation = kind(context, prompts, sampling, keys, [self.senior, self.junior])
        try:
            generation.run(progress)
        finally:
            generation.close()  # drops the decoders' weight snapshots
        self.last_forward_calls = generation.forward_calls  # model forwards of the last call (benchmarks)
        return generation.rollouts()

    def decoding_mode(self, batch: int) -> str:
        """The concrete mode a tandem call of `batch` prompts decodes with (`auto` resolved)."""
        if self.mode != "auto":
            return self.mode
        if batch == 1:  # one row: only its author runs per token, the other catches up in chunks
            return "lazy"
        return "paired" if self.paired is not None else "lockstep"

    def check_prompts(self, prompts, sampling: SamplingConfig) -> None:
        """Raise a `TandemError` for prompts the engine cannot serve (empty, out of vocab, too long)."""
        if not prompts:
            raise TandemError("no prompts given")
        for i, p in enumerate(prompts):
            if not p:
                raise TandemError(f"prompt {i} is empty; every prompt needs at least one token")
            if min(p) < 0 or max(p) >= self.vocab_size:
                raise TandemError(f"prompt {i} has token ids outside the model's vocabulary [0, {self.vocab_size})")
            if len(p) + sampling.max_new_tokens > self.context_length:
                raise TandemError(
                    f"prompt {i} has {len(p)} tokens; with max_new_tokens={sampling.max_new_tokens} that exceeds "
                    f"the model's context of {self.context_length}; shorten the prompt or lower max_new_tokens"
                )
