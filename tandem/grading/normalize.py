"""A gold's written key for leak detection: an answer string with its presentation removed.

`normalize_answer` removes math delimiters, `\\left`/`\\right`, spacing macros,
`\\dfrac`/`\\tfrac` -> `\\frac`, `\\text{}`-style wrappers, degrees (`^\\circ`), `\\%`,
`\\$`, a trailing `.`, a leading `x =`, thousands separators, zero padding and `(C)` -> `C`;
`exact_key` removes whitespace. `tandem_eval.core.leak` looks for that key in response text.
This is not how the grader compares answers: the grader parses them
(`tandem.grading.answer`) and strips nothing it does not account for.

Callers cap the length first (`tandem.grading.grader.MAX_ANSWER_CHARS`): the regular
expressions here run on at most that many characters.
"""

from __future__ import annotations

import re

from tandem.grading.extract import BOX_COMMANDS, last_boxed
from tandem.grading.tokens import read_unicode

_WRAPPERS = r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*"
_SPACING = re.compile(r"(?<!\\)\\[!,;: ]|\\quad|\\qquad|~|\\displaystyle")  # not the `\\` row break
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
    boxed = last_boxed(s) if s.startswith(BOX_COMMANDS) else None
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
    s = read_unicode(str(answer).strip())
    s = _unwrap_delimiters(s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("{,}", ",")
    s = re.sub(r"\\(?:left|right)\s*\.", "", s)
    s = re.sub(r"\\(?:left|right|big|Big|bigg|Bigg)(?![A-Za-z])", "", s)
    s = _SPACING.sub(" ", s)
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
