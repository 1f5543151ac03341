"""The one grader: the RL reward during training and the scorer during evaluation.

`grade(response_text, gold)` = `is_equivalent(extract_answer(response_text), gold)`.

1. Extraction (`tandem.grading.extract`): the outermost last complete `\\boxed{}`, else
   everything after the last answer phrase; never a stray number.
2. Parsing (`tandem.grading.answer`): the whole answer, by a grammar that accounts for
   every token or refuses the answer (`unparsed`). Only presentation, a closed list of
   units and `%` / degrees are dropped; nothing unknown is stripped.
3. Comparison (`tandem.grading.compare`): structure, exact numbers, hedges refused
   (`hedged`), math-verify only for two accepted expressions written without floats.

A gold that is not a string or a finite number, or is empty or null-like (`NaN`, `[]`), is
never matched (counted as `bad_gold`); loaders refuse it first (`tandem.grading.gold`). A
gold outside the grammar is matched only by the same writing. An answer or gold longer than
`MAX_ANSWER_CHARS` is refused (`too_long`).

The whole call is bounded: extraction is linear in the response, parsing runs on at most
`MAX_ANSWER_CHARS` characters, and all math-verify work of one call shares one deadline of
`timeout_s` (default `DEFAULT_TIMEOUT_S`), in any thread (`tandem.grading.timebound`),
a worker's restart included. `warm_up()` imports math-verify once at start-up, so that no
call pays for it. A timeout, a refusal and an internal error all grade as incorrect and are
counted in `STATS`, so a policy that learns to stall or break the grader shows in the
reward's health metrics (`reward_health`). `grade` never raises for any input, except
`TandemError` for a setup mistake (math-verify not installed).
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass

from tandem.errors import TandemError
from tandem.grading.answer import has_unparsed, parse_answer, written_key
from tandem.grading.compare import compare
from tandem.grading.extract import extract_answer, last_boxed
from tandem.grading.gold import gold_text
from tandem.grading.normalize import normalize_answer
from tandem.grading.timebound import UNREADABLE, bounded_math_verify, is_warm, warm_up
from tandem.io.metric_log import GRADER_CALLS, GRADER_PREFIX

DEFAULT_TIMEOUT_S = 5.0
# No real final answer is longer (the longest gold in the shared benchmarks is under 200
# characters); longer ones are refused before any normalisation.
MAX_ANSWER_CHARS = 1000


@dataclass
class GraderStats:
    """Counters for this process (a worker process keeps its own)."""

    calls: int = 0  # is_equivalent calls
    fast_path: int = 0  # decided by string or numeric comparison or a refusal, no math-verify
    math_verify: int = 0  # sent to math-verify
    timeouts: int = 0  # math-verify calls cut by the time bound (graded incorrect)
    errors: int = 0  # math-verify or the grader itself raised (graded incorrect)
    too_long: int = 0  # answers or golds over MAX_ANSWER_CHARS (graded incorrect)
    hedged: int = 0  # hedged or listed answers against a single gold (graded incorrect)
    unparsed: int = 0  # answers with a token the grammar does not account for (graded incorrect)
    bad_gold: int = 0  # golds that are null-like, empty or not a string or number (graded incorrect)


STATS = GraderStats()
_STATS_LOCK = threading.Lock()
_THREAD = threading.local()  # this thread's own counters: a reward loop's threads do not mix
# The counters that mean the grader could not give an answer its full hearing (timeouts,
# too_long, errors) or refused to read it as one committed answer (unparsed, hedged): a
# policy drifting towards what the grader does not pay shows in these first.
HEALTH_COUNTERS = ("timeouts", "too_long", "errors", "unparsed", "hedged")
HEALTH_METRICS = tuple(GRADER_PREFIX + name for name in HEALTH_COUNTERS)  # their per-step metric names


def _thread_stats() -> GraderStats:
    if not hasattr(_THREAD, "stats"):
        _THREAD.stats = GraderStats()
    return _THREAD.stats


def stats(this_thread: bool = False) -> dict:
    """A copy of this process's grading counters (or of the calling thread's alone)."""
    if this_thread:
        return asdict(_thread_stats())
    with _STATS_LOCK:
        return asdict(STATS)


def reset_stats() -> None:
    with _STATS_LOCK:
        for name in asdict(STATS):
            setattr(STATS, name, 0)


def _count(name: str) -> None:
    mine = _thread_stats()
    setattr(mine, name, getattr(mine, name) + 1)
    with _STATS_LOCK:
        setattr(STATS, name, getattr(STATS, name) + 1)


def reward_health(before: dict, after: dict | None = None) -> dict[str, float]:
    """The grader's calls, and those cut short, between two `stats(this_thread=True)` snapshots.

    `grader_calls` and, for each of `HEALTH_COUNTERS`, `grader_<name>`: the reward's health,
    logged beside the reward by every trainer (embedded, verl, HF TRL), so a policy that
    learns to stall the grader, or to write answers it must refuse, shows in the curves.
    """
    after = stats(this_thread=True) if after is None else after
    out = {GRADER_CALLS: float(after["calls"] - before["calls"])}
    for name, metric in zip(HEALTH_COUNTERS, HEALTH_METRICS):
        out[metric] = float(after[name] - before[name])
    return out


def _asker(timeout_s: float):
    """math-verify for one call: every question shares the call's deadline, which starts after
    the one-time import (`warm_up`) if no entry point did it at start-up."""
    deadline = [time.monotonic() + timeout_s]

    def ask(pred_latex: str, gold_latex: str) -> str:
        if not is_warm():
            warm_up()
            deadline[0] = time.monotonic() + timeout_s
        _count("math_verify")
        left = deadline[0] - time.monotonic()
        verdict = bounded_math_verify(pred_latex, gold_latex, left) if left > 0 else None
        if verdict is None:
            return "timeout"
        if verdict == UNREADABLE:
            return "unparsed"
        if isinstance(verdict, str):
            return "error"
        return "equal" if verdict else "unequal"
    return ask


_COUNTED = {"timeout": "timeouts", "error": "errors", "hedged": "hedged", "unparsed": "unparsed"}


def _is_equivalent(pred, gold, timeout_s: float | None) -> bool:
    gold = gold_text(gold)
    if gold is None:
        _count("fast_path")
        _count("bad_gold")
        return False
    if pred is None:
        _count("fast_path")
        return False
    pred = str(pred)
    if len(pred) > MAX_ANSWER_CHARS or len(gold) > MAX_ANSWER_CHARS:
        _count("fast_path")
        _count("too_long")
        return False
    timeout_s = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    before = _thread_stats().math_verify
    p, g = parse_answer(pred), parse_answer(gold)
    if has_unparsed(g.value):  # a gold outside the grammar: only its own writing pays
        verdict = "equal" if written_key(pred) == written_key(gold) else "unequal"
    else:
        verdict = compare(p, g, _asker(timeout_s))
    if _thread_stats().math_verify == before:
        _count("fast_path")
    if verdict in _COUNTED:
        _count(_COUNTED[verdict])
    return verdict == "equal"


# ----------------------------------------------------------------------------- public API


def is_equivalent(pred: str | None, gold, timeout_s: float | None = None) -> bool:
    """Whether answer `pred` equals answer `gold` (both bare answers, not whole responses)."""
    _count("calls")
    try:
        return _is_equivalent(pred, gold, timeout_s)
    except TandemError:
        raise  # a setup mistake (math-verify missing), not an incorrect answer
    except Exception:  # noqa: BLE001 - the reward never raises; counted, graded incorrect
        _count("errors")
        return False


def grade(response_text: str, gold, timeout_s: float | None = None) -> bool:
    """True when the response's final answer equals `gold`. The training reward and the eval scorer."""
    try:
        answer = extract_answer(response_text if isinstance(response_text, str) else str(response_text or ""))
    except Exception:  # noqa: BLE001 - as in is_equivalent
        _count("calls")
        _count("errors")
        return False
    return is_equivalent(answer, gold, timeout_s=timeout_s)


def reward(response_text: str, gold) -> float:
    """`grade` as a float in {0.0, 1.0}, for RL reward functions."""
    return 1.0 if grade(response_text, gold) else 0.0


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "GraderStats",
    "HEALTH_COUNTERS",
    "HEALTH_METRICS",
    "MAX_ANSWER_CHARS",
    "STATS",
    "extract_answer",
    "grade",
    "is_equivalent",
    "last_boxed",
    "normalize_answer",
    "reset_stats",
    "reward",
    "reward_health",
    "stats",
    "warm_up",
]
