"""Golds: which values can be a gold answer at all, refused before any generation.

A gold is a non-empty string or a finite number, judged by its type as loaded, never by
its text: a JSON `null` or `NaN`, an infinity, a boolean, a list (`[]` included) or a dict
cannot be graded, and neither can the text a missing value becomes when a tool writes it
as a string (`NULL_TEXT`: "nan", "null", "[]", ...); the string `"None"` is a real answer
(MATH has it), so it is not in that list. The grader
never matches a value that cannot be a gold (counted as `bad_gold`), and every loader
refuses one at load with `check_gold`, naming the file and line, before any work starts.
Loaders pass the value as loaded: `str(float("nan"))` would be the text `nan`.
"""

from __future__ import annotations

import math

from tandem.errors import TandemError


# What a missing value or an empty container becomes as text (pandas writes NaN as "nan").
NULL_TEXT = frozenset({"nan", "null", "[]", "{}", "()", "set()", "undefined"})


def gold_text(value) -> str | None:
    """The gold as the grader reads it, or None when `value` cannot be a gold (see the module docstring)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    text = value.strip()
    return None if not text or text.lower() in NULL_TEXT else text


def check_gold(value, at: str) -> str:
    """`gold_text(value)`, or one `TandemError` line naming where (`FILE:LINE`) and the fix."""
    text = gold_text(value)
    if text is None:
        shown = "null" if value is None else repr(value)
        raise TandemError(f"{at}: the gold answer is {shown}; fix or drop the row (no response can equal it)")
    return text


def check_golds(values, where: str) -> None:
    """`check_gold` on every value of a column (`where` names it), refusing the first that cannot be a gold."""
    for i, value in enumerate(values):
        check_gold(value, f"{where}, row {i}")
