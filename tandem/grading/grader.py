"""The one grader: the RL reward during training and the scorer during evaluation.

`grade(response_text, gold)` = `is_equivalent(extract_answer(response_text), gold)`.

1. Extraction (`extract_answer`) takes, in this order of preference:
   the content of the last *complete* `\\boxed{...}` / `\\fbox{...}` (nested braces
   matched, `\\{` `\\}` ignored); else the last "final answer is X" / "Final answer: X";
   else the last "the answer is X" / "Answer: X"; else the last `#### X` (GSM8K style);
   else nothing (None: graded incorrect). X is the rest of its line, cut at the first
   sentence end; a `$...$` span in it is taken whole. There is deliberately no
   "last number in the text" fallback: a stray digit is not a committed answer, and as an
   RL reward it would pay for guessing.
2. Normalisation (`normalize_answer`) removes what never changes a value: math
   delimiters, `\\left`/`\\right`, spacing macros, `\\dfrac`/`\\tfrac` -> `\\frac`,
   `\\text{}`-style wrappers, a trailing unit in `\\text{}`/`\\mbox{}`, degrees (`^\\circ`),
   `\\%`, `\\$`, a trailing `.`, a leading `x =`, thousands separators (`2,125`),
   zero padding (`025`), and `(C)` -> `C` for multiple choice.
3. Equivalence (`is_equivalent`): equal normalised strings, or two plain numbers
   (integers, decimals, `a/b`, `\\frac{a}{b}`, `a \\times 10^{b}`, `4.5e33`) that are
   equal (integers exactly, others to a relative 1e-6), decide at once. Anything else
   goes to `math-verify` (parse + verify), which does the symbolic work, unless an
   answer is longer than `MAX_SYMBOLIC_CHARS` (then it is simply unequal).

Every math-verify call is bounded by `timeout_s` (default `DEFAULT_TIMEOUT_S`) in any
thread (see `tandem.grading.timebound`: a SIGALRM timer in the main thread, a killable worker
subprocess elsewhere). A timeout grades as incorrect and is counted in `STATS`.
The common case (exact or numeric match, ~all of GSM8K/AIME/AMC) never reaches math-verify.
"""

from __future__ import annotations

import re
import threading
from dataclasses import asdict, dataclass
from fractions import Fraction

from tandem.grading.timebound import bounded_math_verify

DEFAULT_TIMEOUT_S = 5.0
# Relative tolerance for two non-integer numbers; integers compare exactly.
NUMERIC_REL_TOL = 1e-6
# Longer answers (a whole derivation in a box) skip math-verify: no real answer is this long.
MAX_SYMBOLIC_CHARS = 1000
# Exponents beyond this make exact arithmetic explode (`1e999999999`); such numbers go to math-verify.
MAX_EXPONENT = 400


@dataclass
class GraderStats:
    """Counters for this process (a worker process keeps its own)."""

    calls: int = 0  # is_equivalent calls
    fast_path: int = 0  # decided by string or numeric comparison, no math-verify
    math_verify: int = 0  # sent to math-verify
    timeouts: int = 0  # math-verify calls cut by the time bound (graded incorrect)
    errors: int = 0  # math-verify raised (graded incorrect)


STATS = GraderStats()
_STATS_LOCK = threading.Lock()


def stats() -> dict:
    """A copy of this process's grading counters."""
    with _STATS_LOCK:
        return asdict(STATS)


def reset_stats() -> None:
    with _STATS_LOCK:
        for name in asdict(STATS):
            setattr(STATS, name, 0)


def _count(name: str) -> None:
    with _STATS_LOCK:
        setattr(STATS, name, getattr(STATS, name) + 1)


# ----------------------------------------------------------------------------- extraction

_BOX_COMMANDS = ("\\boxed", "\\fbox")


def _brace_pairs(text: str) -> dict[int, int]:
    """Index of every `{` that closes -> index of its `}` (one pass; `\\{` `\\}` are not braces)."""
    pairs, stack, i = {}, [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            pairs[stack.pop()] = i
        i += 1
    return pairs


def last_boxed(text: str) -> str | None:
    """Content of the last complete `\\boxed{...}` or `\\fbox{...}` (also `\\boxed 5`)."""
    starts = sorted(m.end() for cmd in _BOX_COMMANDS for m in re.finditer(re.escape(cmd) + r"(?![A-Za-z])", text))
    pairs = _brace_pairs(text) if starts else {}
    for end in reversed(starts):
        j = end
        while j < len(text) and text[j] == " ":
            j += 1
        if j < len(text) and text[j] == "{":
            if j in pairs:
                return text[j + 1 : pairs[j]].strip()
        elif j > end:  # `\boxed 5`: one token after a space
            m = re.match(r"[^\s$]+", text[j:])
            if m:
                return m.group(0)
    return None


_MARKERS = [  # tried in order; within one marker the last occurrence wins
    re.compile(r"final answer\s*(?:is|:)\s*:?", re.IGNORECASE),
    re.compile(r"\banswer\s*(?:is|:)\s*:?", re.IGNORECASE),
    re.compile(r"####"),
]


_MATH_SPAN = re.compile(r"\$\$?([^$]+)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)


def _after_marker(rest: str) -> str | None:
    rest = rest.lstrip(" \t*:")
    math_span = _MATH_SPAN.match(rest)
    if math_span:
        return next(g for g in math_span.groups() if g is not None).strip() or None
    line = rest.split("\n", 1)[0].strip().strip("*").strip()
    line = re.split(r"\.(?:\s|$)", line, maxsplit=1)[0]
    return line.strip().strip("*").strip() or None


def extract_answer(text: str) -> str | None:
    """The final answer a response commits to (see the module docstring), or None."""
    if not text:
        return None
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed
    for marker in _MARKERS:
        hits = list(marker.finditer(text))
        if hits:
            answer = _after_marker(text[hits[-1].end() :])
            if answer:
                return answer
    return None


# ----------------------------------------------------------------------------- normalisation

_WRAPPERS = r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*"
_SPACING = re.compile(r"(?<!\\)\\[!,;: ]|\\quad|\\qquad|~|\\displaystyle")  # not the `\\` row break
_TRAILING_UNIT = re.compile(r"^(.+?)\s*" + _WRAPPERS + r"\{\s*[A-Za-z][A-Za-z ]*\}(?:\^\{?\d\}?)?$")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\circ$|\\degree")
_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_ZERO_PADDED = re.compile(r"([-+]?)0+(\d+(?:\.\d+)?)")
_ASSIGNMENT = re.compile(r"^[A-Za-z](?:_\{?\w+\}?)?\s*=\s*([^=]+)$")
_CHOICE = re.compile(r"^\(?([A-E])\)?$")
_WRAPPED = re.compile(_WRAPPERS + r"\{([^{}]*)\}")


def _unwrap_delimiters(s: str) -> str:
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if s.startswith(left) and s.endswith(right) and len(s) >= len(left) + len(right):
            s = s[len(left) : len(s) - len(right)].strip()
    boxed = last_boxed(s) if s.startswith(_BOX_COMMANDS) else None
    return boxed if boxed is not None else s


def _strip_wrappers(s: str) -> str:
    """`\\text{abc}` -> `abc` (innermost first, so nesting unwraps fully)."""
    while True:
        new = _WRAPPED.sub(r"\1", s)
        if new == s:
            return s
        s = new


def normalize_answer(answer: str) -> str:
    """A value-preserving canonical form of an answer string (see the module docstring)."""
    s = str(answer).strip()
    s = _unwrap_delimiters(s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = re.sub(r"\\(?:left|right)\s*\.", "", s)
    s = re.sub(r"\\(?:left|right|big|Big|bigg|Bigg)(?![A-Za-z])", "", s)
    s = _SPACING.sub(" ", s)
    unit = _TRAILING_UNIT.match(s.strip())
    if unit:
        s = unit.group(1)
    s = _strip_wrappers(s)
    s = _DEGREES.sub("", s)
    s = s.replace("\\%", "").replace("%", "").replace("\\$", "")
    s = re.sub(r"\s+", " ", s).strip().rstrip(".").strip()
    assignment = _ASSIGNMENT.match(s)
    if assignment:
        s = assignment.group(1).strip()
    compact = s.replace(" ", "")
    if _THOUSANDS.fullmatch(compact):
        s = compact.replace(",", "")
    padded = _ZERO_PADDED.fullmatch(s)
    if padded:
        s = padded.group(1) + padded.group(2)
    s = s.lstrip("+") if re.fullmatch(r"\+\d.*", s) else s
    choice = _CHOICE.fullmatch(s)
    return choice.group(1) if choice else s


def _exact_key(normalized: str) -> str:
    """Whitespace-free form; also `^{2}` -> `^2` so brace style does not matter."""
    s = re.sub(r"\s+", "", normalized)
    return re.sub(r"([\^_])\{(\w)\}", r"\1\2", s)


# ----------------------------------------------------------------------------- numbers

_DECIMAL = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_SCI = re.compile(rf"({_DECIMAL})(?:\\times|\\cdot|\*)10\^\{{?([-+]?\d+)\}}?")
_FRAC = re.compile(r"([-+]?)(\d*)\\frac\{?(\d+)\}?\{?(\d+)\}?")


def _pow10(exponent: str) -> Fraction:
    e = int(exponent)
    if abs(e) > MAX_EXPONENT:
        raise OverflowError(exponent)
    return Fraction(10) ** e


def _decimal(text: str) -> Fraction:
    mantissa, _, exponent = text.lower().partition("e")
    return Fraction(mantissa) * (_pow10(exponent) if exponent else 1)


def _as_number(key: str) -> Fraction | None:
    """The exact value of a plain-number answer (on its `_exact_key`), else None."""
    try:
        if re.fullmatch(_DECIMAL, key):
            return _decimal(key)
        if m := re.fullmatch(rf"({_DECIMAL})/({_DECIMAL})", key):
            return _decimal(m.group(1)) / _decimal(m.group(2))
        if m := _SCI.fullmatch(key):
            return _decimal(m.group(1)) * _pow10(m.group(2))
        if m := re.fullmatch(r"10\^\{?([-+]?\d+)\}?", key):
            return _pow10(m.group(1))
        if m := _FRAC.fullmatch(key):
            sign, whole, num, den = m.groups()
            value = Fraction(int(whole or 0)) + Fraction(int(num), int(den))  # `1\frac{4}{5}` is mixed
            return -value if sign == "-" else value
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return None


def _numbers_equal(a: Fraction, b: Fraction) -> bool:
    if a == b:
        return True
    if a.denominator == 1 and b.denominator == 1:
        return False
    return abs(a - b) <= NUMERIC_REL_TOL * max(abs(a), abs(b))


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


# ----------------------------------------------------------------------------- public API


def is_equivalent(pred: str | None, gold, timeout_s: float | None = None) -> bool:
    """Whether answer `pred` equals answer `gold` (both bare answers, not whole responses)."""
    _count("calls")
    if pred is None or gold is None:
        _count("fast_path")
        return False
    pred_n, gold_n = normalize_answer(pred), normalize_answer(str(gold))
    pred_k, gold_k = _exact_key(pred_n), _exact_key(gold_n)
    if not pred_k or not gold_k:
        _count("fast_path")
        return False
    if pred_k == gold_k:
        _count("fast_path")
        return True
    pred_v, gold_v = _as_number(pred_k), _as_number(gold_k)
    if pred_v is not None and gold_v is not None:
        _count("fast_path")
        return _numbers_equal(pred_v, gold_v)
    if max(len(pred_n), len(gold_n)) > MAX_SYMBOLIC_CHARS:
        _count("fast_path")
        return False
    timeout_s = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    return _bounded_math_verify(pred_n, gold_n, timeout_s)


def grade(response_text: str, gold, timeout_s: float | None = None) -> bool:
    """True when the response's final answer equals `gold`. The training reward and the eval scorer."""
    return is_equivalent(extract_answer(response_text), gold, timeout_s=timeout_s)


def reward(response_text: str, gold) -> float:
    """`grade` as a float in {0.0, 1.0}, for RL reward functions."""
    return 1.0 if grade(response_text, gold) else 0.0


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "GraderStats",
    "STATS",
    "extract_answer",
    "grade",
    "is_equivalent",
    "last_boxed",
    "normalize_answer",
    "reset_stats",
    "reward",
    "stats",
]
