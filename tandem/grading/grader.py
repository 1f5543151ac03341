"""The one grader: the RL reward during training and the scorer during evaluation.

`grade(response_text, gold)` = `is_equivalent(extract_answer(response_text), gold)`.

1. Extraction (`tandem.grading.extract`): the last complete `\\boxed{}`, else an answer
   phrase; never a stray number.
2. Normalisation (`tandem.grading.normalize`): presentation removed, values kept.
3. Equivalence (`is_equivalent`), in this order:
   - an answer or gold longer than `MAX_ANSWER_CHARS` is refused (unequal, counted as
     `too_long`): no real answer is that long, and the cap keeps every later step bounded;
   - equal normalised strings are equal;
   - an answer that hedges (`5 or 6`, `5 \\text{ and more}`, `\\pm 5`, `x \\geq 5`) or lists
     values where the gold is a single value is unequal (counted as `hedged`);
   - two plain numbers are decided by `tandem.grading.numbers` (exact values; no tolerance);
   - anything else goes to math-verify (parse + verify), which does the symbolic work.

The whole call is bounded: extraction is linear in the response, normalisation runs on at
most `MAX_ANSWER_CHARS` characters, and every math-verify call is bounded by `timeout_s`
(default `DEFAULT_TIMEOUT_S`) in any thread (`tandem.grading.timebound`). A timeout, a
refusal and an internal error all grade as incorrect and are counted in `STATS`, so a
policy that learns to stall or break the grader shows in the reward's health metrics
(`reward_health`). `grade` never raises for any input, except `TandemError` for a setup
mistake (math-verify not installed).
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass

from tandem.errors import TandemError
from tandem.grading.extract import extract_answer, last_boxed
from tandem.grading.normalize import exact_key, hedged, normalize_answer
from tandem.grading.numbers import numbers_equal, parse_number
from tandem.grading.timebound import bounded_math_verify

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


STATS = GraderStats()
_STATS_LOCK = threading.Lock()
_THREAD = threading.local()  # this thread's own counters: a reward loop's threads do not mix
# The counters that mean the grader could not give an answer its full hearing.
HEALTH_COUNTERS = ("timeouts", "too_long", "errors")
HEALTH_METRICS = tuple(f"grader_{name}" for name in HEALTH_COUNTERS)  # their per-step metric names


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
    out = {"grader_calls": float(after["calls"] - before["calls"])}
    for name, metric in zip(HEALTH_COUNTERS, HEALTH_METRICS):
        out[metric] = float(after[name] - before[name])
    return out


def _bounded_math_verify(pred: str, gold: str, timeout_s: float) -> bool:
    _count("math_verify")
    verdict = bounded_math_verify(pred, gold, timeout_s)
    if verdict is None:
        _count("timeouts")
        return False
    if isinstance(verdict, str):
        _count("errors")
        return False
    return verdict


def _fast_verdict(pred_n: str, gold_n: str) -> bool | None:
    """The verdict without math-verify, or None when math-verify must decide."""
    pred_k, gold_k = exact_key(pred_n), exact_key(gold_n)
    if not pred_k or not gold_k:
        return False
    if pred_k == gold_k:
        return True
    if hedged(pred_n, gold_n):
        _count("hedged")
        return False
    pred_v, gold_v = parse_number(pred_k), parse_number(gold_k)
    if pred_v is not None and gold_v is not None:
        return numbers_equal(pred_v, gold_v)
    return None


def _is_equivalent(pred, gold, timeout_s: float | None) -> bool:
    if pred is None or gold is None:
        _count("fast_path")
        return False
    pred, gold = str(pred), str(gold)
    if len(pred) > MAX_ANSWER_CHARS or len(gold) > MAX_ANSWER_CHARS:
        _count("fast_path")
        _count("too_long")
        return False
    pred_n, gold_n = normalize_answer(pred), normalize_answer(gold)
    verdict = _fast_verdict(pred_n, gold_n)
    if verdict is not None:
        _count("fast_path")
        return verdict
    timeout_s = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    return _bounded_math_verify(pred_n, gold_n, timeout_s)


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
]
