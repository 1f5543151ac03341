"""Who did the work in a co-written response: answer leaks, the final answer's author, the budget.

A handoff score credits the team. Three per-sample facts say how much of it is the junior's:

- `answer_visible`: whether the gold answer, normalised as the grader normalises it
  (`tandem.grading.normalize.normalize_answer`, then `exact_key`), appears in text the
  senior wrote before the junior's last turn (each senior turn decoded on its own). With
  no junior turn, or on a solo row, every senior turn counts. `VISIBLE` or `NOT_VISIBLE`;
  `UNDETERMINED` for a gold that cannot be normalised or whose key is shorter than
  `MIN_KEY_CHARS` (a single digit appears in almost any solution; a numeric gold's sign does
  not count, so -5 is as undetermined as 5): counted, never guessed. A numeric gold is found
  by value: each number in the text is read whole (12 is not in 120, 3.12, 12.5 or 12,000;
  12.0 is 12), with a `-` directly before it as its sign only where that `-` is not a binary
  minus (after a digit or a closing bracket, or with no space after a word: `8 - 5`, `8-5`
  and `x-5` hold 5, not -5; `= -5`, `(-5)` and `is -5` hold -5). A rational gold (a fraction or a
  decimal) is compared by value in every notation (`0.5`, `1/2`, `\\frac{1}{2}`); other golds match as
  text, not inside a longer term (`tandem.rewards.answer_text`).
- `final_author`: who wrote the answer the grader reads: the last turn holding a complete
  `\\boxed{}` (the grader's first preference), else the last turn from which an answer is
  extracted; `senior`, `junior`, or `none` (no answer).
- `hit_budget`: the response ended by spending its token budget (finish reason `length`),
  not by the release's round cap.

`controlled_counts` and `pass_at_k_over_clean` turn the rows into leak-controlled pass@k:
per problem, the unbiased estimator over its clean samples with its own n; a problem with
fewer than k clean samples is left out of pass@k and counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# the text rules live in the core, once (the transfer reward's cut uses them too); re-exported here
from tandem.rewards.answer_text import (MIN_KEY_CHARS, first_appearance, gold_key, is_sign, key_pattern,  # noqa: F401
                                numbers, shows_answer)
from tandem.grading.extract import extract_answer, last_boxed
from tandem.metrics import pass_at_k

VISIBLE, NOT_VISIBLE, UNDETERMINED = "visible", "not_visible", "undetermined"
VISIBILITY = (VISIBLE, NOT_VISIBLE, UNDETERMINED)
AUTHORS = ("senior", "junior", "none")


def _turn_texts(ids: Sequence[int], mask: Sequence[int], tokenizer) -> list[tuple[int, str]]:
    from tandem_eval.core.handoff import turn_spans  # here: the handoff module loads torch

    return [(mask[a], tokenizer.decode(list(ids[a:b]), skip_special_tokens=True)) for a, b in turn_spans(list(mask))]


def answer_visible(ids: Sequence[int], mask: Sequence[int] | None, gold, tokenizer) -> str:
    """`VISIBLE`, `NOT_VISIBLE` or `UNDETERMINED` (see the module docstring); mask None = all senior."""
    key = gold_key(gold)
    if key is None:
        return UNDETERMINED
    turns = _turn_texts(ids, [1] * len(ids) if mask is None else mask, tokenizer)
    junior_turns = [i for i, (author, _) in enumerate(turns) if author == 0]
    before = turns[: junior_turns[-1]] if junior_turns else turns
    seen = any(author == 1 and shows_answer(text, key) for author, text in before)
    return VISIBLE if seen else NOT_VISIBLE


def final_author(ids: Sequence[int], mask: Sequence[int] | None, tokenizer) -> str:
    """`senior`, `junior` or `none`: who wrote the answer the grader extracts (mask None = all senior)."""
    turns = _turn_texts(ids, [1] * len(ids) if mask is None else mask, tokenizer)
    for found in (last_boxed, extract_answer):
        for author, text in reversed(turns):
            if found(text) is not None:
                return "senior" if author == 1 else "junior"
    return "none"


def hit_budget(finish_reason: str, cut_by_max_rounds: bool | None = None) -> bool:
    """The response spent its token budget (a chain cut by the round cap is graded as `length` too)."""
    return finish_reason == "length" and not cut_by_max_rounds


def rates(rows: Sequence) -> dict:
    """Benchmark-level counts and rates of the three fields; rows written before them count as `unknown`."""
    known = [r for r in rows if r.answer_visible is not None]
    count = {v: sum(r.answer_visible == v for r in known) for v in VISIBILITY}
    determined = count[VISIBLE] + count[NOT_VISIBLE]
    authors = {a: sum(r.final_author == a for r in known) for a in AUTHORS}
    hits = sum(bool(r.hit_budget) for r in known)
    return {"answer_visible": {**count, "unknown": len(rows) - len(known),
                               "visible_rate": count[VISIBLE] / determined if determined else None,
                               "undetermined_rate": count[UNDETERMINED] / len(known) if known else None},
            "final_author": authors,
            "hit_budget": {"count": hits, "rate": hits / len(known) if known else None}}


def controlled_counts(rows: Sequence) -> list[dict]:
    """Per problem, in first-seen order: {"id", "n", "c"} over the samples whose answer was not visible."""
    out: dict[str, dict] = {}
    for r in rows:
        entry = out.setdefault(r.problem_id, {"id": r.problem_id, "n": 0, "c": 0})
        if r.answer_visible == NOT_VISIBLE:
            entry["n"] += 1
            entry["c"] += int(r.correct)
    return list(out.values())


def pass_at_k_over_clean(counts: Sequence[tuple[int, int]], ks: Sequence[int]) -> dict:
    """{"pass@k": mean over the problems with n >= k, or None}, with `left_out` per k (problems with n < k)."""
    out: dict = {"left_out": {}}
    for k in ks:
        kept = [(n, c) for n, c in counts if n >= k]
        out[f"pass@{k}"] = sum(pass_at_k(n, c, k) for n, c in kept) / len(kept) if kept else None
        out["left_out"][f"pass@{k}"] = len(counts) - len(kept)
    return out


def pass_at_k_over_clean_with_se(counts_by_benchmark: Mapping[str, Sequence[tuple[int, int]]], ks: Sequence[int],
                                 resamples: int, seed: int) -> dict:
    """`tandem_eval.core.bootstrap.pass_at_k_with_se` per k over the problems with n >= k (a benchmark left with
    none drops out of that k's macro); {benchmark and "macro": {"pass@k": {"mean", "se"} or None}, "left_out"}."""
    from tandem_eval.core.bootstrap import pass_at_k_with_se

    out: dict = {name: {} for name in counts_by_benchmark}
    out["macro"], out["left_out"] = {}, {}
    for k in ks:
        kept = {name: [(n, c) for n, c in counts if n >= k] for name, counts in counts_by_benchmark.items()}
        out["left_out"][f"pass@{k}"] = sum(len(c) - len(kept[name]) for name, c in counts_by_benchmark.items())
        kept = {name: c for name, c in kept.items() if c}
        stats = pass_at_k_with_se(kept, [k], resamples, seed) if kept else {}
        for name in [*counts_by_benchmark, "macro"]:
            out[name][f"pass@{k}"] = stats.get(name, {}).get(f"pass@{k}")
    return out
