"""The step handoff as a turn loop between two solo rollout backends.

The reference definition of the handoff is `TandemConfig(selection_strategy="step",
first_author="senior")`: one backend holding both models runs it directly. This loop
runs the same thing on two backends that each hold one model (two vLLM engines), and on
pairs with different vocabularies:

- the senior writes first; a turn ends after the first token of the step set (ids whose
  text contains a blank line, `step_ids`), exactly where the `step` strategy switches
  author; the other model then continues the same token history;
- both models share one response budget of `max_new_tokens`; a chain ends when the
  budget is spent or its author emits an end-of-sequence token;
- a call may also stop at its own token cap before its step is finished; the same author
  then goes on with the step in the next round (no handoff).

With `step_ids=None` (only for `--allow-vocab-mismatch`) a turn ends at the string
`\\n\\n` instead, and each model is given its own tokenizer's encoding of the prompt text
plus the response text so far; the budget then counts each step in its writer's tokens,
and the returned token ids and authorship mask are in the senior's vocabulary, each
junior step re-encoded by the senior's tokenizer on its own.

`cap_rounds` applies the release's round cap (a chain stops after a number of rounds, a
round being one senior turn and one junior turn) to a finished response of any route.
Generation is causal, so cutting a response after its last allowed turn gives exactly
the response a loop with that cap would have written.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tqdm.auto import tqdm

from tandem.rollout.contract import Rollout, RolloutBackend
from tandem.rollout.sampling import SamplingConfig

STEP_BREAK = "\n\n"


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


def turn_end(rollout: Rollout, tokenizer, step_ids: set[int] | None) -> str:
    """How a turn ended: "step" (wrote a step break), "eos" or "length" (hit its token cap)."""
    if rollout.finish_reason == "length":
        return "length"
    if step_ids is not None:
        return "step" if rollout.token_ids and rollout.token_ids[-1] in step_ids else "eos"
    return "step" if STEP_BREAK in tokenizer.decode(rollout.token_ids, skip_special_tokens=True) else "eos"


def _advance(chain: _Chain, ids: list[int], text: str, ended: str, budget: int) -> None:
    chain.segments.append((chain.author, list(ids), text))
    chain.used += len(ids)
    if ended == "eos":
        chain.finish = "stop"
    elif chain.used >= budget:
        chain.finish = "length"
    elif ended == "step":
        chain.author = 1 - chain.author


def _to_rollout(chain: _Chain, senior_tokenizer, retokenize: bool) -> Rollout:
    ids, mask = [], []
    for author, seg_ids, seg_text in chain.segments:
        if retokenize and author == 1:
            seg_ids = list(senior_tokenizer(seg_text, add_special_tokens=False)["input_ids"])
        ids += seg_ids
        mask += [1 - author] * len(seg_ids)
    text = senior_tokenizer.decode(ids, skip_special_tokens=True) if not retokenize else "".join(
        t for _, _, t in chain.segments)
    return Rollout(chain.prompt_ids[0], ids, mask, text, chain.finish or "length", chain.key)


def turn_spans(authorship_mask: list[int]) -> list[tuple[int, int]]:
    """(start, end) of each turn: a maximal run of one author in the authorship mask."""
    spans, start = [], 0
    for i in range(1, len(authorship_mask) + 1):
        if i == len(authorship_mask) or authorship_mask[i] != authorship_mask[start]:
            spans.append((start, i))
            start = i
    return spans


def cap_rounds(rollout: Rollout, max_rounds: int | None, tokenizer) -> tuple[Rollout, bool]:
    """`rollout` cut after `max_rounds` rounds (2 * max_rounds turns); (the rollout, whether it was cut)."""
    if max_rounds is not None and max_rounds < 1:
        raise ValueError(f"max_rounds must be >= 1 or None, got {max_rounds}")
    spans = turn_spans(rollout.authorship_mask)
    if max_rounds is None or len(spans) <= 2 * max_rounds:
        return rollout, False
    end = spans[2 * max_rounds - 1][1]
    ids = rollout.token_ids[:end]
    # An unfinished chain is graded as it stands; its finish reason is "length" (it never ended itself).
    return replace(rollout, token_ids=ids, authorship_mask=rollout.authorship_mask[:end],
                   text=tokenizer.decode(ids, skip_special_tokens=True), finish_reason="length",
                   senior_logprobs=None if rollout.senior_logprobs is None else rollout.senior_logprobs[:end],
                   junior_logprobs=None if rollout.junior_logprobs is None else rollout.junior_logprobs[:end]), True


def _write_turns(writer: RolloutBackend, chains: list[_Chain], contexts, sampling: SamplingConfig,
                 step_ids: set[int] | None) -> list[tuple[list[int], str, str]]:
    """One turn for each chain: (token ids, text, how it ended); one backend call per token cap."""
    stops = {"stop_token_ids": tuple(sorted(step_ids))} if step_ids is not None else {"stop_strings": (STEP_BREAK,)}
    groups: dict[int, list[int]] = {}
    for i, chain in enumerate(chains):
        groups.setdefault(sampling.max_new_tokens - chain.used, []).append(i)
    out: list = [None] * len(chains)
    for cap, rows in groups.items():
        turn = replace(sampling, max_new_tokens=cap, **stops)
        # A fresh sampling stream per call: the key mixes in the tokens already used.
        keys = [(chains[i].key + 1_000_003 * chains[i].used) & ((1 << 63) - 1) for i in rows]
        for i, r in zip(rows, writer.generate([contexts[i] for i in rows], turn, keys, solo=True)):
            text = writer.tokenizer.decode(r.token_ids, skip_special_tokens=True)
            out[i] = (r.token_ids, text, turn_end(r, writer.tokenizer, step_ids))
    return out


def run_step_handoff(senior: RolloutBackend, junior: RolloutBackend, prompt_ids: list[list[int]],
                     prompt_texts: list[str], keys: list[int], sampling: SamplingConfig,
                     step_ids: list[int] | None, junior_prompt_ids: list[list[int]] | None = None,
                     progress: bool = True) -> list[Rollout]:
    """Senior-first step alternation for every prompt (one chain per prompt); see the module docstring."""
    retokenize = step_ids is None
    stop_ids = None if retokenize else set(step_ids)
    writers, tokenizers = (senior, junior), (senior.tokenizer, junior.tokenizer)
    jp = junior_prompt_ids if junior_prompt_ids is not None else prompt_ids
    chains = [_Chain([p, q], t, k) for p, q, t, k in zip(prompt_ids, jp, prompt_texts, keys)]
    bar = tqdm(total=len(chains), desc="handoff", unit="chain", disable=not progress)
    while any(c.finish is None for c in chains):
        for author in (0, 1):
            turn = [c for c in chains if c.author == author and c.finish is None]
            if not turn:
                continue
            contexts = [_context(c, author, tokenizers, retokenize) for c in turn]
            for chain, (ids, text, ended) in zip(turn, _write_turns(writers[author], turn, contexts, sampling,
                                                                     stop_ids)):
                _advance(chain, ids, text, ended, sampling.max_new_tokens)
                bar.update(chain.finish is not None)
    bar.close()
    return [_to_rollout(c, senior.tokenizer, retokenize) for c in chains]
