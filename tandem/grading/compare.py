"""Equality of two parsed answers: structure first, exact numbers, math-verify only for expressions.

`compare(pred, gold, ask)` returns a `Verdict`: `equal`, `unequal`, or the reason the answer
was not given a hearing (`hedged`, `unparsed`, `timeout`, `error`). `ask(pred_latex,
gold_latex)` is math-verify under the caller's time bound; it is asked only about two values
the grammar accepted as expressions, written with exact fractions (never a float), so
math-verify never decides a decimal's value.

The rules:
- an answer that hedges where the gold does not (`Answer.hedges`), or gives several values
  (a list, a tuple, an interval, an inequality) against one, is `hedged`;
- an unparsed answer is `unparsed`;
- bare lists, sets and unions compare as multisets, brackets (tuples, intervals) in order and
  with the same brackets, matrices cell by cell;
- numbers by `tandem.grading.numbers.numbers_equal`; a `%` may stand for a hundredth
  (`25%` is 25 and 0.25);
- choices by letter, text by its words (case aside);
- a number or expression against an expression: equal keys, else math-verify;
- a unit on both sides must be the same unit (synonyms alike, no conversion); a unit on one
  side only is presentation.
"""

from __future__ import annotations

from collections.abc import Callable

from tandem.grading.answer import (
    Answer, Chain, Choice, Expr, Matrix, Number, Seq, Text, Union, Unparsed, Value, holds_variable,
)
from tandem.grading.numbers import numbers_equal

Verdict = str  # "equal" | "unequal" | "hedged" | "unparsed" | "timeout" | "error"
Ask = Callable[[str, str], Verdict]
_SCALAR = (Number, Expr)
_ONE_VALUE = (Number, Expr, Text, Choice)


def _numbers(p: Number, g: Number) -> bool:
    """`numbers_equal`, where a percent may also be read as its hundredth: `0.18` for `18\\%`. A percent
    on both sides is compared as written, so `0.18\\%` is not `18\\%`."""
    if p.percent and g.percent:
        return numbers_equal((p.value, p.decimals), (g.value, g.decimals))

    def readings(n: Number):
        yield n.value, n.decimals
        if n.percent:
            yield n.value / 100, (n.decimals or 0) + 2 if n.decimals is not None else None
    return any(numbers_equal(a, b) for a in readings(p) for b in readings(g))


def _equations(v: Number | Expr) -> int:
    return v.equations if isinstance(v, Expr) else 0


def _units(p: Number | Expr, g: Number | Expr) -> Verdict | None:
    """A unit on both sides must be the same unit (by its one name: no conversion); the word
    `percent` is read as `%` only where the gold writes a percent."""
    if isinstance(p, Number) and p.percent_word and "%" not in g.unit.split():
        return "unparsed"
    if p.unit and g.unit and p.unit != g.unit:
        return "unequal"  # `24 km` is not `24 m`
    return None


# Two float values this far apart (relative to the larger, or absolute near 0) are two values: the
# evaluator's error is below 1e-12 relative, so no exactly equal pair is ever this far apart.
CLEARLY_APART = 1e-9


def _float(v: Number | Expr) -> float | None:
    if isinstance(v, Number):
        return float(v.value)
    return v.numeric


def _clearly_unequal(p: Number | Expr, g: Number | Expr) -> bool:
    """Whether two variable-free values differ beyond any float error (`answer.numeric_value`), so that
    math-verify need not be asked (its verdict needs an exactly zero difference): `3.1416` and `\\pi`."""
    a, b = _float(p), _float(g)
    return a is not None and b is not None and abs(a - b) > CLEARLY_APART * max(1.0, abs(a), abs(b))


def _scalars(p: Number | Expr, g: Number | Expr, ask: Ask) -> Verdict:
    if _equations(p) != _equations(g):
        return "unequal"  # `5 = 6` is not the number 6, nor `y = 2x` the expression 2x
    if (verdict := _units(p, g)) is not None:
        return verdict
    if isinstance(p, Number) and isinstance(g, Number):
        return "equal" if _numbers(p, g) else "unequal"
    if not any(isinstance(v, Number) and v.percent for v in (p, g)) and _clearly_unequal(p, g):
        return "unequal"
    if isinstance(p, Expr) and isinstance(g, Expr):
        if p.words - g.words:
            return "unparsed"  # a word the grammar accepts only where the gold writes it too
        if p.key == g.key:
            return "equal"
        if p.key_only or g.key_only:
            return "unequal"
    elif isinstance(p, Expr) and p.words:
        return "unparsed"
    elif (isinstance(p, Expr) and p.key_only) or (isinstance(g, Expr) and g.key_only):
        return "unequal"
    return ask(p.latex, g.latex)


def _multiset(ps: tuple, gs: tuple, ask: Ask) -> Verdict:
    """Each gold item matched by a different answer item (lists and sets are unordered)."""
    free = list(range(len(ps)))
    for g in gs:
        for k in free:
            verdict = _values(ps[k], g, ask)
            if verdict == "equal":
                free.remove(k)
                break
            if verdict in ("timeout", "error"):
                return verdict
        else:
            return "unequal"
    return "equal"


def _in_order(ps, gs, ask: Ask) -> Verdict:
    if len(ps) != len(gs):
        return "unequal"
    for p, g in zip(ps, gs):
        verdict = _values(p, g, ask)
        if verdict != "equal":
            return verdict
    return "equal"


def _values(p: Value, g: Value, ask: Ask) -> Verdict:
    if isinstance(p, Unparsed):
        return "unparsed"
    if isinstance(p, Chain):  # `AB = \sqrt{52} = 2\sqrt{13}`: every side is the gold
        if not isinstance(g, _SCALAR) or _equations(g):
            return "unequal"
        for side in p.sides:
            verdict = _values(side, g, ask)
            if verdict != "equal":
                return verdict
        return "equal"
    if isinstance(p, Seq) and p.open == "{" and len(p.items) == 1 and isinstance(g, _ONE_VALUE):
        return _values(p.items[0], g, ask)  # `\{5\}`: a set of one value, for that value
    if isinstance(g, Seq) and g.open == "{" and len(g.items) == 1 and isinstance(p, _ONE_VALUE):
        return _values(p, g.items[0], ask)
    if isinstance(p, (Seq, Union, Matrix)) and isinstance(g, _ONE_VALUE):
        return "hedged"  # several values (a list, a tuple, an interval) where the gold has one
    if isinstance(p, Seq) and isinstance(g, Seq) and (p.named or g.named) and "" in (p.open, g.open):
        # `x = 4, y = -3` against a bare list: the values as a list (against a tuple: in order, below)
        return _multiset(p.items, g.items, ask) if len(p.items) == len(g.items) else "unequal"
    if isinstance(p, Seq) and isinstance(g, Seq) and {p.open, g.open} == {"", "{"}:
        # `\{-3, 2\}` against the list `-3, 2` (or the reverse): both unordered, the values as a multiset
        return _multiset(p.items, g.items, ask) if len(p.items) == len(g.items) else "unequal"
    if isinstance(p, Seq) and isinstance(g, Seq):
        if (p.open, p.close) != (g.open, g.close) or len(p.items) != len(g.items):
            return "unequal"
        unordered = p.open in ("", "{")
        return _multiset(p.items, g.items, ask) if unordered else _in_order(p.items, g.items, ask)
    if isinstance(p, Union) and isinstance(g, Union):  # a union is a set of its parts: any order
        return _multiset(p.parts, g.parts, ask) if len(p.parts) == len(g.parts) else "unequal"
    if isinstance(p, Matrix) and isinstance(g, Matrix):
        if len(p.rows) != len(g.rows) or any(len(a) != len(b) for a, b in zip(p.rows, g.rows)):
            return "unequal"
        return _in_order([c for r in p.rows for c in r], [c for r in g.rows for c in r], ask)
    if isinstance(p, Choice) and isinstance(g, Choice):
        return "equal" if p.letter == g.letter else "unequal"
    if isinstance(p, Choice) and p.value is not None and isinstance(g, _SCALAR):
        return _values(p.value, g, ask)  # `(B) 18` for the gold 18: the value decides
    if isinstance(g, Choice) and g.value is not None and isinstance(p, _SCALAR):
        return _values(p, g.value, ask)
    if isinstance(p, Text) and isinstance(g, Text):
        return "equal" if p.words == g.words else "unequal"
    if isinstance(p, _SCALAR) and isinstance(g, _SCALAR):
        return _scalars(p, g, ask)
    return "unequal"


def _as_equation(answer: Answer) -> Expr | None:
    """The answer as one equation: `y = 2x + 1` whole (its name kept), or an unnamed `x + y = 5`."""
    if answer.equation is not None:
        return answer.equation
    v = answer.value
    return v if isinstance(v, Expr) and v.equations == 1 else None


def compare(pred: Answer, gold: Answer, ask: Ask) -> Verdict:
    """The verdict on parsed answer `pred` against parsed gold `gold` (see the module docstring)."""
    if pred.hedges - gold.hedges:
        return "hedged"
    if gold.equation is not None and holds_variable(gold.value):
        # A gold that is an equation (`y = 2x + 1`: a name, then a value in a variable) needs an
        # equation: `2x + 1` alone is refused, `y = 1 + 2x` is compared whole.
        equation = _as_equation(pred)
        return _values(equation, gold.equation, ask) if equation is not None else "unequal"
    return _values(pred.value, gold.value, ask)

