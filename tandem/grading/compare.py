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
- bare lists and sets compare as multisets, brackets (tuples, intervals) in order and with
  the same brackets, unions part by part, matrices cell by cell;
- numbers by `tandem.grading.numbers.numbers_equal`; a `%` may stand for a hundredth
  (`25%` is 25 and 0.25);
- choices by letter, text by its words (case aside);
- a number or expression against an expression: equal keys, else math-verify.
"""

from __future__ import annotations

from collections.abc import Callable

from tandem.grading.answer import Answer, Choice, Expr, Matrix, Number, Seq, Text, Union, Unparsed, Value
from tandem.grading.numbers import numbers_equal

Verdict = str  # "equal" | "unequal" | "hedged" | "unparsed" | "timeout" | "error"
Ask = Callable[[str, str], Verdict]
_SCALAR = (Number, Expr)
_ONE_VALUE = (Number, Expr, Text, Choice)


def _numbers(p: Number, g: Number) -> bool:
    """`numbers_equal`, where a percent may also be read as its hundredth."""
    def readings(n: Number):
        yield n.value, n.decimals
        if n.percent:
            yield n.value / 100, (n.decimals or 0) + 2 if n.decimals is not None else None
    return any(numbers_equal(a, b) for a in readings(p) for b in readings(g))


def _equations(v: Number | Expr) -> int:
    return v.equations if isinstance(v, Expr) else 0


def _scalars(p: Number | Expr, g: Number | Expr, ask: Ask) -> Verdict:
    if _equations(p) != _equations(g):
        return "unequal"  # `5 = 6` is not the number 6, nor `y = 2x` the expression 2x
    if isinstance(p, Number) and isinstance(g, Number):
        return "equal" if _numbers(p, g) else "unequal"
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
    if isinstance(p, (Seq, Union, Matrix)) and isinstance(g, _ONE_VALUE):
        return "hedged"  # several values (a list, a tuple, an interval) where the gold has one
    if isinstance(p, Seq) and isinstance(g, Seq):
        if (p.open, p.close) != (g.open, g.close) or len(p.items) != len(g.items):
            return "unequal"
        unordered = p.open in ("", "{")
        return _multiset(p.items, g.items, ask) if unordered else _in_order(p.items, g.items, ask)
    if isinstance(p, Union) and isinstance(g, Union):
        return _in_order(p.parts, g.parts, ask)
    if isinstance(p, Matrix) and isinstance(g, Matrix):
        if len(p.rows) != len(g.rows) or any(len(a) != len(b) for a, b in zip(p.rows, g.rows)):
            return "unequal"
        return _in_order([c for r in p.rows for c in r], [c for r in g.rows for c in r], ask)
    if isinstance(p, Choice) and isinstance(g, Choice):
        return "equal" if p.letter == g.letter else "unequal"
    if isinstance(p, Text) and isinstance(g, Text):
        return "equal" if p.words == g.words else "unequal"
    if isinstance(p, _SCALAR) and isinstance(g, _SCALAR):
        return _scalars(p, g, ask)
    return "unequal"


def compare(pred: Answer, gold: Answer, ask: Ask) -> Verdict:
    """The verdict on parsed answer `pred` against parsed gold `gold` (see the module docstring)."""
    if pred.hedges - gold.hedges:
        return "hedged"
    return _values(pred.value, gold.value, ask)

