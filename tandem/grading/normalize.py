"""Normalisation: a value-preserving canonical form of an answer string, and hedge detection.

`normalize_answer` removes what never changes a value: math delimiters, `\\left`/`\\right`,
spacing macros, `\\dfrac`/`\\tfrac` -> `\\frac`, `\\text{}`-style wrappers, a trailing
unit in `\\text{}`/`\\mbox{}` (words, never a hedge such as `\\text{ and more}`),
degrees (`^\\circ`), `\\%`, `\\$`, a trailing `.`, a leading `x =`, thousands separators
(`2,125`, `2{,}125`, `10,\\!080`), zero padding (`025`), and `(C)` -> `C` for multiple
choice. Unicode is read as LaTeX: vulgar fractions (`½` -> `\\frac{1}{2}`, `3½` is mixed),
the minus sign `−`, `×`, `·`, `π`, `°`.

`hedged(pred, gold)`: an answer that qualifies itself (`or`, `and more`, `at least`,
`\\pm`, `\\approx`, an inequality, `not`) or lists several values is not equal to a single gold.

Callers cap the length first (`tandem.grading.grader.MAX_ANSWER_CHARS`): the regular
expressions here run on at most that many characters.
"""

from __future__ import annotations

import re
import unicodedata
from fractions import Fraction

from tandem.grading.extract import BOX_COMMANDS, last_boxed

_WRAPPERS = r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*"
_SPACING = re.compile(r"(?<!\\)\\[!,;: ]|\\quad|\\qquad|~|\\displaystyle")  # not the `\\` row break
_TRAILING_UNIT = re.compile(r"^(.+?)\s*" + _WRAPPERS + r"\{\s*([A-Za-z]+(?: [A-Za-z]+)*)\s*\}(?:\^\{?\d\}?)?$")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\circ$|\\degree")
_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_ZERO_PADDED = re.compile(r"([-+]?)0+(\d+(?:\.\d+)?)")
_ASSIGNMENT = re.compile(r"^[A-Za-z](?:_\{?\w+\}?)?\s*=\s*([^=]+)$")
_CHOICE = re.compile(r"^\(?([A-E])\)?$")
_WRAPPED = re.compile(_WRAPPERS + r"\{([^{}]*)\}")
_UNICODE = {"−": "-", "–": "-", "×": "\\times ", "·": "\\cdot ", "π": "\\pi ", "⁄": "/", "\u00a0": " "}

# Words and signs by which an answer qualifies itself or offers several values.
_HEDGE = re.compile(
    r"(?<![A-Za-z\\])(?:or|and|more|less|least|most|than|about|approximately|approx|around|roughly"
    r"|nearly|almost|between|either|maybe|possibly|probably|not)(?![A-Za-z])"
    r"|\\(?:pm|mp|approx|sim|simeq|geq?|leq?|gt|lt|neq|ne|geqslant|leqslant)(?![A-Za-z])"
    r"|[±∓≈≥≤≠<>;]",
    re.IGNORECASE,
)


def _read_unicode(s: str) -> str:
    """Unicode math as LaTeX; a vulgar fraction after a digit makes a mixed number (`3½`)."""
    if s.isascii():
        return s
    out = []
    for ch in s:
        if unicodedata.name(ch, "").startswith("VULGAR FRACTION") and ch != "⁄":
            value = Fraction(unicodedata.numeric(ch)).limit_denominator(10)
            out.append(f"\\frac{{{value.numerator}}}{{{value.denominator}}}")
        else:
            out.append(_UNICODE.get(ch, ch))
    return "".join(out)


def _unwrap_delimiters(s: str) -> str:
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if s.startswith(left) and s.endswith(right) and len(s) >= len(left) + len(right):
            s = s[len(left) : len(s) - len(right)].strip()
    boxed = last_boxed(s) if s.startswith(BOX_COMMANDS) else None
    return boxed if boxed is not None else s


def _strip_wrappers(s: str) -> str:
    """`\\text{abc}` -> `abc` (innermost first, so nesting unwraps fully)."""
    while True:
        new = _WRAPPED.sub(r"\1", s)
        if new == s:
            return s
        s = new


def _strip_unit(s: str) -> str:
    """`5.4 \\text{ cents}` -> `5.4`; a hedge in the braces is kept, so it is seen later."""
    unit = _TRAILING_UNIT.match(s.strip())
    if unit and not _HEDGE.search(unit.group(2)):
        return unit.group(1)
    return s


def normalize_answer(answer: str) -> str:
    """A value-preserving canonical form of an answer string (see the module docstring)."""
    s = _read_unicode(str(answer).strip())
    s = _unwrap_delimiters(s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("{,}", ",")
    s = re.sub(r"\\(?:left|right)\s*\.", "", s)
    s = re.sub(r"\\(?:left|right|big|Big|bigg|Bigg)(?![A-Za-z])", "", s)
    s = _SPACING.sub(" ", s)
    s = _strip_unit(s)
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
    s = s[1:] if s.startswith("+") and s[1:2].isdigit() else s
    choice = _CHOICE.fullmatch(s)
    return choice.group(1) if choice else s


def exact_key(normalized: str) -> str:
    """Whitespace-free form; also `^{2}` -> `^2` so brace style does not matter."""
    s = re.sub(r"\s+", "", normalized)
    return re.sub(r"([\^_])\{(\w)\}", r"\1\2", s)


def _several_values(key: str) -> bool:
    return "," in key


def hedged(pred: str, gold: str) -> bool:
    """Whether normalised `pred` qualifies itself or lists values where normalised `gold` is single."""
    gold_single = not _HEDGE.search(gold) and not _several_values(gold)
    return gold_single and (bool(_HEDGE.search(pred)) or _several_values(pred))
