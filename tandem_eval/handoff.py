"""The step handoff as a turn loop, for backends that cannot run the tandem engine.

With the reference engine the handoff is just `TandemConfig(selection_strategy="step",
first_author="senior")`: the engine owns the tandem process and this loop is not used.
vLLM (one `LLM` per model) and pairs with different vocabularies instead alternate whole
generate calls, each of which writes one reasoning step:

- the senior writes first; a step ends when the text gains a blank line (`\\n\\n`, kept
  in the output); the other model then continues the same history;
- both models share one response budget of `max_new_tokens`; a chain ends when the
  budget is spent or its author emits an end-of-sequence token;
- a call may also stop at its own token cap before its step is finished; the same author
  then goes on with the step in the next round (no handoff).

History is handed over as token ids. With `retokenize=True` (only for
`--allow-vocab-mismatch`), each model is instead given its own tokenizer's encoding of
the prompt text plus the response text so far; the budget then counts each step in its
writer's tokens, and the returned token ids and authorship mask are in the senior's
vocabulary, each junior step re-encoded by the senior's tokenizer on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from tqdm.auto import tqdm

STEP_BREAK = "\n\n"


@dataclass
class Step:
    """One generate call's output for one chain."""

    token_ids: list[int]
    text: str
    ended: str  # "step" (wrote a blank line) | "eos" | "length" (hit the call's token cap)


@dataclass
class Sample:
    """One finished response (solo or handoff)."""

    token_ids: list[int]
    authorship_mask: list[int]  # 1 = the senior wrote the token
    text: str
    finish_reason: str  # "stop" | "length"

    @property
    def num_handoffs(self) -> int:
        m = self.authorship_mask
        return sum(a != b for a, b in zip(m, m[1:]))


class StepWriter(Protocol):
    tokenizer: object

    def write_steps(self, contexts: list[list[int]], max_tokens: list[int], keys: list[int]) -> list[Step]:
        """Continue each context by one step, at most max_tokens[i] tokens; keys seed the sampling."""


@dataclass
class _Chain:
    prompt_ids: list[list[int]]  # per writer (the same list twice unless re-tokenising)
    prompt_text: str
    key: int
    author: int = 0  # 0 = senior, 1 = junior
    segments: list[tuple[int, list[int], str]] = field(default_factory=list)
    used: int = 0
    finish: str | None = None


def _context(chain: _Chain, writer: int, tokenizers, retokenize: bool) -> list[int]:
    if not retokenize:
        return chain.prompt_ids[writer] + [t for _, ids, _ in chain.segments for t in ids]
    text = chain.prompt_text + "".join(t for _, _, t in chain.segments)
    return list(tokenizers[writer](text, add_special_tokens=False)["input_ids"])


def _advance(chain: _Chain, step: Step, budget: int) -> None:
    chain.segments.append((chain.author, list(step.token_ids), step.text))
    chain.used += len(step.token_ids)
    if step.ended == "eos":
        chain.finish = "stop"
    elif chain.used >= budget:
        chain.finish = "length"
    elif step.ended == "step":
        chain.author = 1 - chain.author


def _to_sample(chain: _Chain, senior_tokenizer, retokenize: bool) -> Sample:
    ids, mask = [], []
    for author, seg_ids, seg_text in chain.segments:
        if retokenize and author == 1:
            seg_ids = list(senior_tokenizer(seg_text, add_special_tokens=False)["input_ids"])
        ids += seg_ids
        mask += [1 - author] * len(seg_ids)
    text = senior_tokenizer.decode(ids, skip_special_tokens=True) if not retokenize else "".join(
        t for _, _, t in chain.segments)
    return Sample(ids, mask, text, chain.finish or "length")


def run_step_handoff(senior: StepWriter, junior: StepWriter, prompt_ids: list[list[int]], prompt_texts: list[str],
                     keys: list[int], max_new_tokens: int, retokenize: bool = False,
                     junior_prompt_ids: list[list[int]] | None = None, progress: bool = True) -> list[Sample]:
    """Senior-first step alternation for every prompt (one chain per prompt)."""
    writers = (senior, junior)
    tokenizers = (senior.tokenizer, junior.tokenizer)
    jp = junior_prompt_ids if junior_prompt_ids is not None else prompt_ids
    chains = [_Chain([p, q], t, k) for p, q, t, k in zip(prompt_ids, jp, prompt_texts, keys)]
    bar = tqdm(total=len(chains), desc="handoff", unit="chain", disable=not progress)
    while True:
        active = [c for c in chains if c.finish is None]
        if not active:
            break
        for author in (0, 1):
            turn = [c for c in active if c.author == author and c.finish is None]
            if not turn:
                continue
            contexts = [_context(c, author, tokenizers, retokenize) for c in turn]
            caps = [max_new_tokens - c.used for c in turn]
            # A fresh sampling stream per call: the key mixes in the tokens already used.
            call_keys = [(c.key + 1_000_003 * c.used) & ((1 << 63) - 1) for c in turn]
            for chain, step in zip(turn, writers[author].write_steps(contexts, caps, call_keys)):
                _advance(chain, step, max_new_tokens)
                bar.update(chain.finish is not None)
    bar.close()
    return [_to_sample(c, senior.tokenizer, retokenize) for c in chains]
