"""The answer grammar: an answer's tokens parsed into a value, or refused as `Unparsed`.

`parse_answer(s)` reads the whole answer. Only presentation is dropped: a wrapping group
or box, a leading currency sign, a leading `x =` (or `x \\in`), and trailing decorations
that never change a value: `%` (kept as a flag, since 25% may be written for 0.25),
degrees, and units from the closed list `tandem.grading.lexicon.UNITS`. What is left must
be one of:

- `Matrix`: a `pmatrix` / `bmatrix` / `matrix` whose cells are values;
- `Union`: intervals joined by `\\cup`;
- `Seq`: values separated by `,` or `;`, bare (`3, 5`), in brackets (`(1, 2]`, a tuple or
  an interval) or in set braces (`\\{1, 2\\}`);
- an inequality bounding one variable (`x \\ge 5`, `1 < x \\le 3`), read as its interval;
- `Choice`: a letter A-E, with or without brackets;
- `Text`: words only (`\\text{Evelyn}`);
- `Number`: integers, decimals, fractions, mixed numbers, scientific forms, a repeating
  decimal with `\\overline` - exact rationals (`tandem.grading.numbers`);
- `Expr`: anything else made only of numbers, variables, the commands of
  `tandem.grading.lexicon.COMMANDS` and `+ - * / ^ _ = ( ) [ ] { } | ! '`.

Anything else is `Unparsed` with the reason: a word outside the lists, two numbers side by
side (`1 2`, `2 1/2`), a `?`, a box inside other content, an unknown command. Hedge words and
commands (`or`, `\\pm`, `\\approx`, ...) are collected in `Answer.hedges` wherever they stand.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from tandem.grading.lexicon import (
    COMMANDS, FUNCTIONS, GREATER, HEDGE_COMMANDS, HEDGE_WORDS, LESS, MATRIX_ENVIRONMENTS, UNIT_JOINERS, UNITS,
)
from tandem.grading.numbers import parse_number
from tandem.grading.tokens import Token, Unreadable, tokenize

_EXPR_SYMBOLS = frozenset("+-*/^_=()[]{}|!'")
_NUMBER_SYMBOLS = frozenset("+-/^{}*")
_NUMBER_COMMANDS = frozenset({"frac", "times", "cdot"})
_OPEN = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True)
class Unparsed:
    reason: str


@dataclass(frozen=True)
class Number:
    value: Fraction
    decimals: int | None  # digits after the point as written; None for an exact form
    percent: bool = False

    @property
    def latex(self) -> str:
        v = self.value
        return str(v.numerator) if v.denominator == 1 else f"\\frac{{{v.numerator}}}{{{v.denominator}}}"


@dataclass(frozen=True)
class Expr:
    latex: str  # what math-verify is asked about: decimals written as exact fractions
    key: str  # whitespace-free form, for exact equality
    words: frozenset[str]  # runs of two or more letters that are not function names
    key_only: bool = False  # math-verify cannot read it (a number with a subscript: a base)
    equations: int = 0  # top-level `=` signs: an equation is compared only with an equation


@dataclass(frozen=True)
class Text:
    words: tuple[str, ...]


@dataclass(frozen=True)
class Choice:
    letter: str


@dataclass(frozen=True)
class Seq:
    open: str  # "" for a bare list, "{" for a set
    close: str
    items: tuple


@dataclass(frozen=True)
class Union:
    parts: tuple


@dataclass(frozen=True)
class Matrix:
    rows: tuple


Value = Number | Expr | Text | Choice | Seq | Union | Matrix | Unparsed


@dataclass(frozen=True)
class Answer:
    value: Value
    hedges: frozenset[str]


# ----------------------------------------------------------------------------- helpers


def _trim(toks: list[Token]) -> list[Token]:
    i, j = 0, len(toks)
    while i < j and toks[i].kind == "space":
        i += 1
    while j > i and toks[j - 1].kind == "space":
        j -= 1
    return toks[i:j]


def _end_of_sentence(toks: list[Token]) -> list[Token]:
    """Without the sentence's closing period (two where the answer's own math ended in one:
    `$245 yd.$.`); three or more trail off (`5...`, `5. . .`) and are kept, so unparsed."""
    toks = _trim(toks)
    periods = 0
    while periods < 3 and toks and _is(toks[-1], "sym", "."):
        toks, periods = _trim(toks[:-1]), periods + 1
    return toks if periods < 3 else toks + [Token("sym", "...")]


def _is(tok: Token, kind: str, text: str | None = None) -> bool:
    return tok.kind == kind and (text is None or tok.text == text)


def _closing(toks: list[Token], i: int) -> int:
    """Index of the token closing the bracket at `i` (any closer at depth 0), or -1."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j]
        if (t.kind == "sym" and t.text in "([{") or t.kind == "lset" or t.kind == "begin":
            depth += 1
        elif (t.kind == "sym" and t.text in ")]}") or t.kind == "rset" or t.kind == "end":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _split_top(toks: list[Token], is_sep) -> list[list[Token]]:
    parts, depth, start = [], 0, 0
    for j, t in enumerate(toks):
        if (t.kind == "sym" and t.text in "([{") or t.kind in ("lset", "begin"):
            depth += 1
        elif (t.kind == "sym" and t.text in ")]}") or t.kind in ("rset", "end"):
            depth -= 1
        elif depth == 0 and is_sep(t):
            parts.append(toks[start:j])
            start = j + 1
    parts.append(toks[start:])
    return parts


def _hedges(toks: list[Token]) -> frozenset[str]:
    found = {t.text.lower() for t in toks if t.kind == "word" and t.text.lower() in HEDGE_WORDS}
    found |= {t.text for t in toks if t.kind == "cmd" and t.text in HEDGE_COMMANDS}
    return frozenset(found)


# ----------------------------------------------------------------------------- presentation


def _unwrap(toks: list[Token]) -> list[Token]:
    """A group or a box around the whole answer, a leading currency sign, `x =` / `x \\in`."""
    while True:
        toks = _trim(toks)
        if len(toks) >= 2 and _is(toks[0], "sym", "{") and _closing(toks, 0) == len(toks) - 1:
            toks = toks[1:-1]
        elif (len(toks) >= 3 and _is(toks[0], "cmd") and toks[0].text in ("boxed", "fbox")
              and _is(toks[1], "sym", "{") and _closing(toks, 1) == len(toks) - 1):
            toks = toks[2:-1]
        elif toks and toks[0].kind == "dollar":
            toks = toks[1:]
        elif (lead := _leading_variable(toks)) and lead < len(toks):
            if toks[lead].kind == "sym" and toks[lead].text == "=" and not any(_is(t, "sym", "=") for t in toks[lead + 1:]):
                toks = toks[lead + 1:]
            elif _is(toks[lead], "cmd", "in"):
                toks = toks[lead + 1:]
            else:
                return toks
        else:
            return toks


def _leading_variable(toks: list[Token]) -> int:
    """End of a leading single-letter variable (with a subscript) and spaces, else 0."""
    if not toks or not (toks[0].kind == "word" and len(toks[0].text) == 1 and not toks[0].in_text):
        return 0
    i = 1
    if i + 1 < len(toks) and _is(toks[i], "sym", "_"):
        i = _closing(toks, i + 1) + 1 if _is(toks[i + 1], "sym", "{") else i + 2
        if i <= 0:
            return 0
    while i < len(toks) and toks[i].kind == "space":
        i += 1
    return i


def _strip_exponent(toks: list[Token]) -> list[Token]:
    """A trailing `^2`, `^{2}` (a unit's power)."""
    if len(toks) >= 2 and _is(toks[-2], "sym", "^") and _is(toks[-1], "num"):
        return toks[:-2]
    if len(toks) >= 4 and _is(toks[-1], "sym", "}") and _is(toks[-2], "num") and _is(toks[-3], "sym", "{") \
            and _is(toks[-4], "sym", "^"):
        return toks[:-4]
    return toks


def _is_unit(tok: Token) -> bool:
    return tok.kind == "word" and tok.text in UNITS and (tok.in_text or len(tok.text) > 1)


def _strip_unit(toks: list[Token]) -> list[Token] | None:
    """`toks` without its trailing unit (a power after it, units before it joined by `per` or
    `/`), or None when it does not end in a unit with a value before it."""
    base = _trim(_strip_exponent(toks))
    if len(base) < 2 or not _is_unit(base[-1]):
        return None
    rest = _trim(base[:-1])
    if rest and (_is(rest[-1], "sym", "/") or (rest[-1].kind == "word" and rest[-1].text in UNIT_JOINERS)):
        before = _trim(rest[:-1])
        return _strip_unit(before) if before and _strip_unit(before) is not None else None
    return rest


def _strip_decorations(toks: list[Token]) -> tuple[list[Token], bool]:
    """Trailing `%`, degrees and units -> (what is left, whether a `%` was there)."""
    percent = False
    while True:
        toks = _trim(toks)
        if len(toks) < 2:
            return toks, percent
        last = toks[-1]
        if last.kind == "percent":
            percent, toks = True, toks[:-1]
        elif _is(last, "cmd", "circ") or _is(last, "cmd", "degree"):
            toks = toks[:-2] if len(toks) > 2 and _is(toks[-2], "sym", "^") else toks[:-1]
        elif (len(toks) >= 4 and _is(last, "sym", "}") and _is(toks[-2], "cmd", "circ") and _is(toks[-3], "sym", "{")
              and _is(toks[-4], "sym", "^")):
            toks = toks[:-4]
        elif (rest := _strip_unit(toks)) is not None:
            toks = rest
        else:
            return toks, percent


# ----------------------------------------------------------------------------- values


def _number(toks: list[Token], percent: bool) -> Number | None:
    """A plain number, read exactly, or None."""
    if not all(t.kind in ("num", "space") or (t.kind == "sym" and t.text in _NUMBER_SYMBOLS)
               or (t.kind == "cmd" and t.text in _NUMBER_COMMANDS) or (t.kind == "cmd" and t.text == "overline")
               for t in toks):
        return None
    solid = [t for t in toks if t.kind != "space"]
    if any(a.kind == "num" and b.kind == "num" for a, b in zip(solid, solid[1:])):
        return None  # `12 5`, `2 1/2`: two numbers side by side are not one number
    repeating = _repeating(toks)
    if repeating is not None:
        return Number(repeating, None, percent)
    compact = "".join(t.text if t.kind == "num" else ("\\" + t.text if t.kind == "cmd" else t.text)
                      for t in toks if t.kind != "space")
    parsed = parse_number(compact)
    if parsed is None:
        return None
    return Number(parsed[0], parsed[1], percent)


def _repeating(toks: list[Token]) -> Fraction | None:
    """`0.1\\overline{6}` (= 1/6), signed; None when not of that form."""
    toks = [t for t in toks if t.kind != "space"]
    sign = -1 if toks and _is(toks[0], "sym", "-") else 1
    toks = toks[1:] if toks and toks[0].kind == "sym" and toks[0].text in "+-" else toks
    if not (len(toks) == 5 and _is(toks[0], "num") and _is(toks[1], "cmd", "overline") and _is(toks[2], "sym", "{")
            and _is(toks[3], "num") and _is(toks[4], "sym", "}")):
        return None
    head, rep = toks[0].text, toks[3].text
    if not rep.isdigit() or "e" in head.lower() or "." not in head and not head.isdigit():
        return None
    whole, _, fixed = head.partition(".")
    base = Fraction(int(whole or "0")) + (Fraction(int(fixed), 10 ** len(fixed)) if fixed else 0)
    tail = Fraction(int(rep), (10 ** len(rep) - 1) * 10 ** len(fixed))
    return sign * (base + tail)


def _merge_thousands(toks: list[Token]) -> list[Token]:
    """`1,000`, `1 000`, `10,\\!080`: digit groups of three joined into one number token, when the
    whole answer is such a number (so `1, 2` stays a list and `12 5` stays two numbers)."""
    body = toks[1:] if toks and toks[0].kind == "sym" and toks[0].text in "+-" else toks
    nums = [t for t in body if t.kind == "num"]
    seps = [t for t in body if t.kind != "num"]
    if len(nums) < 2 or not all(t.kind == "space" or _is(t, "sym", ",") for t in seps):
        return toks
    # The number groups must alternate with separators (a comma and spaces count as one).
    groups, gaps, i = [], set(), 0
    while i < len(body):
        if body[i].kind != "num":
            return toks
        groups.append(body[i].text)
        i += 1
        sep = ""
        while i < len(body) and body[i].kind != "num":
            sep += body[i].text
            i += 1
        if i < len(body):
            if sep.strip() not in ("", ","):
                return toks
            gaps.add(sep.strip() or " ")
    if len(gaps) != 1:
        return toks  # one separator throughout: `1,000 000` is not a number
    first, rest = groups[0], groups[1:]
    if not (first.isdigit() and 1 <= len(first) <= 3 and first[0] != "0"):
        return toks
    last = len(rest) - 1
    if not all(g[:3].isdigit() and (len(g) == 3 or (k == last and g[3:4] == "." and g[4:].isdigit()))
               for k, g in enumerate(rest)):
        return toks
    return toks[: len(toks) - len(body)] + [Token("num", "".join(groups))]


def _serialize(toks: list[Token]) -> str:
    out = []
    for t in toks:
        if t.kind == "num":
            out.append(_exact_latex(t.text))
        elif t.kind == "cmd":
            out.append("\\" + t.text + " ")
        elif t.kind == "word":
            out.append(f"\\text{{{t.text}}}" if t.in_text else t.text)
        elif t.kind in ("lset", "rset"):
            out.append(t.text)
        else:
            out.append(t.text)
    return "".join(out)


def _exact_latex(num: str) -> str:
    """A number token as LaTeX that math-verify reads exactly: never a float."""
    if num.isdigit():
        return num
    parsed = parse_number(num.rstrip(".") if num.endswith(".") else num)
    if parsed is None:
        return num
    v = parsed[0]
    return str(v.numerator) if v.denominator == 1 else f"{{\\frac{{{v.numerator}}}{{{v.denominator}}}}}"


def _expression(toks: list[Token]) -> Expr | Unparsed:
    words, depth, prev_num, sub_depth = set(), {"(": 0, "[": 0, "{": 0}, False, []
    for i, t in enumerate(toks):
        if t.kind == "num":
            if prev_num:
                return Unparsed("two numbers side by side")
            prev_num = True
            continue
        if t.kind == "space":
            continue
        prev_num = False
        if t.kind == "word":
            if t.in_text and not sub_depth:
                return Unparsed(f"the word {t.text!r}")
            if len(t.text) > 1 and t.text not in FUNCTIONS and not t.in_text:
                words.add(t.text)
        elif t.kind == "cmd":
            if t.text not in COMMANDS and t.text not in HEDGE_COMMANDS:
                return Unparsed(f"the command \\{t.text}")
        elif t.kind == "sym":
            if t.text not in _EXPR_SYMBOLS:
                return Unparsed(f"{t.text!r}")
            if t.text in _OPEN:
                depth[t.text] += 1
                if t.text == "{" and i > 0 and _is(toks[i - 1], "sym", "_"):
                    sub_depth.append(depth["{"])
            elif t.text in ")]}":
                opener = {")": "(", "]": "[", "}": "{"}[t.text]
                if sub_depth and opener == "{" and sub_depth[-1] == depth["{"]:
                    sub_depth.pop()
                depth[opener] -= 1
                if depth[opener] < 0:
                    return Unparsed("unbalanced brackets")
        elif t.kind not in ("lset", "rset"):
            return Unparsed(f"{t.kind} {t.text!r}")
    if any(depth.values()):
        return Unparsed("unbalanced brackets")
    latex = _serialize(toks).strip()
    key = "".join(t.text if t.kind != "cmd" else "\\" + t.text for t in toks if t.kind != "space")
    solid = [t for t in toks if t.kind != "space"]
    based = any(a.kind == "num" and _is(b, "sym", "_") for a, b in zip(solid, solid[1:]))  # `204_5`
    equations = sum(1 for t in toks if _is(t, "sym", "="))
    if equations > 1:
        return Unparsed("a chain of equations")
    return Expr(latex, key, frozenset(words), key_only=based, equations=equations)


def _inequality(toks: list[Token]) -> Value | None:
    """`x > a`, `a \\le x`, `a < x \\le b` as the interval of x; None when not of that form."""
    rel = lambda t: (t.kind == "sym" and t.text in "<>") or (t.kind == "cmd" and t.text in LESS | GREATER)  # noqa: E731
    parts = _split_top(toks, rel)
    ops = [t for t in toks if rel(t)]
    if len(parts) < 2 or len(parts) > 3:
        return None
    less = [t.text in LESS or t.text == "<" for t in ops]
    strict = [t.text in ("<", ">", "lt", "gt") for t in ops]
    variables = [i for i, p in enumerate(parts) if _leading_variable(_trim(p)) == len(_trim(p)) > 0]
    if len(variables) != 1:
        return None
    v = variables[0]
    inf, neg_inf = Expr("\\infty", "\\infty", frozenset()), Expr("-\\infty", "-\\infty", frozenset())
    if len(parts) == 2:
        bound = _value(parts[1 - v])
        upper = less[0] == (v == 0)  # x < a, or a > x: a bounds from above
        if upper:
            return Seq("(", ")" if strict[0] else "]", (neg_inf, bound))
        return Seq("(" if strict[0] else "[", ")", (bound, inf))
    if v != 1 or less[0] != less[1]:
        return None
    lo, hi = (_value(parts[0]), _value(parts[2])) if less[0] else (_value(parts[2]), _value(parts[0]))
    s_lo, s_hi = (strict[0], strict[1]) if less[0] else (strict[1], strict[0])
    return Seq("(" if s_lo else "[", ")" if s_hi else "]", (lo, hi))


def _bracketed(toks: list[Token]) -> Value | None:
    """`(...)`, `[...]`, `(...]`, `\\{...\\}` around the whole answer."""
    first, last = toks[0], toks[-1]
    if first.kind == "lset" and last.kind == "rset" and _closing(toks, 0) == len(toks) - 1:
        items = _split_top(toks[1:-1], lambda t: _is(t, "sym", ",") or _is(t, "sym", ";"))
        return Seq("{", "}", tuple(_value(p) for p in items))
    if not (_is(first, "sym") and first.text in "([" and _is(last, "sym") and last.text in ")]"):
        return None
    if _closing(toks, 0) != len(toks) - 1:
        return None
    items = _split_top(toks[1:-1], lambda t: _is(t, "sym", ",") or _is(t, "sym", ";"))
    if len(items) == 1:
        return _value(toks[1:-1])  # grouping: `(2.5)` is 2.5
    return Seq(first.text, last.text, tuple(_value(p) for p in items))


def _matrix(toks: list[Token]) -> Value | None:
    if not (toks[0].kind == "begin" and toks[0].text in MATRIX_ENVIRONMENTS and _is(toks[-1], "end", toks[0].text)):
        return None
    if _closing(toks, 0) != len(toks) - 1:
        return None
    rows = _split_top(toks[1:-1], lambda t: t.kind == "rowsep")
    if rows and not _trim(rows[-1]):
        rows = rows[:-1]
    return Matrix(tuple(tuple(_value(c) for c in _split_top(r, lambda t: _is(t, "sym", "&"))) for r in rows))


def _words_only(toks: list[Token]) -> Value | None:
    content = [t for t in toks if t.kind != "space" and not (t.kind == "sym" and t.text in "()")]
    if not content or not all(t.kind == "word" for t in content):
        return None
    if len(content) == 1 and len(content[0].text) == 1 and content[0].text in "ABCDE":
        return Choice(content[0].text)
    if len(content) == 1 and len(content[0].text) == 1 and not content[0].in_text:
        return None  # a variable
    if any(t.kind == "sym" for t in toks):
        return None
    return Text(tuple(t.text.lower() for t in content))


def _value(toks: list[Token]) -> Value:
    toks = _unwrap(toks)
    if not toks:
        return Unparsed("nothing to read")
    toks, percent = _strip_decorations(toks)
    toks = _merge_thousands(_trim(toks))
    if not toks:
        return Unparsed("nothing to read")
    for reader in (_matrix,):
        found = reader(toks)
        if found is not None:
            return found
    unions = _split_top(toks, lambda t: _is(t, "cmd", "cup"))
    if len(unions) > 1:
        return Union(tuple(_value(p) for p in unions))
    items = _split_top(toks, lambda t: _is(t, "sym", ",") or _is(t, "sym", ";"))
    if len(items) > 1:
        return Seq("", "", tuple(_value(p) for p in items))
    for reader in (_bracketed, _inequality, _words_only):
        found = reader(toks)
        if found is not None:
            return found
    number = _number(toks, percent)
    if number is not None:
        return number
    if percent:
        return Unparsed("a percent of an expression")
    return _expression(toks)


def _list_joiners(toks: list[Token]) -> list[Token]:
    """Without the `and` of `2, 3, and 4` (a word right after a top-level comma): list writing, not a hedge."""
    out, depth, after_comma = [], 0, False
    for t in toks:
        if (t.kind == "sym" and t.text in "([{") or t.kind in ("lset", "begin"):
            depth += 1
        elif (t.kind == "sym" and t.text in ")]}") or t.kind in ("rset", "end"):
            depth -= 1
        if after_comma and t.kind == "word" and t.text.lower() == "and":
            after_comma = False
            continue
        if t.kind != "space":
            after_comma = depth == 0 and _is(t, "sym", ",")
        out.append(t)
    return out


def has_unparsed(value: Value) -> bool:
    """Whether any part of `value` is unparsed."""
    if isinstance(value, Unparsed):
        return True
    parts = value.items if isinstance(value, Seq) else value.parts if isinstance(value, Union) else (
        [c for r in value.rows for c in r] if isinstance(value, Matrix) else ())
    return any(has_unparsed(p) for p in parts)


@lru_cache(maxsize=4096)
def parse_answer(s: str) -> Answer:
    """The value of answer string `s` (see the module docstring); never raises for a string."""
    toks = tokenize(s)
    if isinstance(toks, Unreadable):
        return Answer(Unparsed(toks.reason), frozenset())
    toks = _list_joiners(_end_of_sentence(toks))
    return Answer(_value(toks), _hedges(toks))


def written_key(s: str) -> str:
    """How `s` is written, presentation aside: the key on which a gold outside the grammar is matched."""
    toks = tokenize(s)
    if isinstance(toks, Unreadable):
        return "\0" + s  # never equal to a readable answer's key
    return "".join(t.text if t.kind != "cmd" else "\\" + t.text for t in _trim(_unwrap(_end_of_sentence(toks)))
                   if t.kind != "space")
