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

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache

from tandem.grading.lexicon import (
    COMMANDS, FUNCTIONS, GENERIC_UNITS, GREEK, GREATER, HEDGE_COMMANDS, HEDGE_WORDS, LESS, MATRIX_ENVIRONMENTS, PERCENT_WORDS,
    UNIT_ABBREVIATIONS, UNIT_JOINERS, UNIT_NAMES, UNIT_POWERS, UNITS,
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
    unit: str = ""  # the unit's one name (`unit_name`), "" for none; `%` is the unit "%"
    percent_word: bool = False  # `\\text{ percent}`: a percent only against a gold that writes one

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
    unit: str = ""  # as for Number
    letters: frozenset[str] = frozenset()  # its variables: letters, Greek letters and words (`e`, `i` included)
    numeric: float | None = None  # its value as a float when it holds no variable (`numeric_value`), else None


@dataclass(frozen=True)
class Text:
    words: tuple[str, ...]


@dataclass(frozen=True)
class Choice:
    letter: str
    value: "Value | None" = None  # `(B) 18`: the choice's value as written beside its letter


@dataclass(frozen=True)
class Seq:
    open: str  # "" for a bare list, "{" for a set
    close: str
    items: tuple
    named: bool = False  # `x = 4, y = -3`: a tuple in the order written, or a list against a bare list gold


@dataclass(frozen=True)
class Union:
    parts: tuple


@dataclass(frozen=True)
class Matrix:
    rows: tuple


@dataclass(frozen=True)
class Chain:
    """`AB = \\sqrt{52} = 2\\sqrt{13}`: a named value written several ways; each side must be the gold."""

    sides: tuple


Value = Number | Expr | Text | Choice | Seq | Union | Matrix | Chain | Unparsed


@dataclass(frozen=True)
class Answer:
    value: Value
    hedges: frozenset[str]
    # `y = 2x + 1`: the whole answer as one equation when a name was dropped before its value
    # (`tandem.grading.compare`: a gold whose named value holds a variable is an equation).
    equation: Expr | None = None


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


_OPENERS, _CLOSERS = frozenset("([{"), frozenset(")]}")
_OPENING_KINDS, _CLOSING_KINDS = frozenset({"lset", "begin"}), frozenset({"rset", "end"})


def _split_top(toks: list[Token], is_sep) -> list[list[Token]]:
    parts, depth, start = [], 0, 0
    for j, t in enumerate(toks):
        kind = t.kind
        if kind == "sym":
            if t.text in _OPENERS:
                depth += 1
                continue
            if t.text in _CLOSERS:
                depth -= 1
                continue
        elif kind in _OPENING_KINDS:
            depth += 1
            continue
        elif kind in _CLOSING_KINDS:
            depth -= 1
            continue
        if depth == 0 and is_sep(t):
            parts.append(toks[start:j])
            start = j + 1
    parts.append(toks[start:])
    return parts


def _hedges(toks: list[Token]) -> frozenset[str]:
    found = {t.text.lower() for t in toks if t.kind == "word" and t.text.lower() in HEDGE_WORDS}
    found |= {t.text for t in toks if t.kind == "cmd" and t.text in HEDGE_COMMANDS}
    return frozenset(found)


# ----------------------------------------------------------------------------- presentation


def _unwrap(toks: list[Token], currency: list | None = None, names: list | None = None) -> list[Token]:
    """A group or a box around the whole answer, a leading currency sign (noted in `currency`), a
    leading `+` (`+\\infty`), a name before the only `=` (`x =`, `AB =`, `f(x) =`: `_name_end`; the
    name's tokens noted in `names`) or before `\\in`."""
    while True:
        toks = _trim(toks)
        if len(toks) >= 2 and _is(toks[0], "sym", "{") and _closing(toks, 0) == len(toks) - 1:
            toks = toks[1:-1]
        elif (len(toks) >= 3 and _is(toks[0], "cmd") and toks[0].text in ("boxed", "fbox")
              and _is(toks[1], "sym", "{") and _closing(toks, 1) == len(toks) - 1):
            toks = toks[2:-1]
        elif toks and toks[0].kind == "dollar":
            toks = toks[1:]
            if currency is not None:
                currency.append("dollar")
        elif len(toks) >= 2 and _is(toks[0], "sym", "+") and not _is(toks[1], "sym"):
            toks = toks[1:]  # `+\infty`, `+5`: the sign of a positive value is presentation
        elif (named := _named_tuple(toks)) is not None:
            toks = toks[named:]
        elif (lead := _name_end(toks)) and lead < len(toks):
            if toks[lead].kind == "sym" and toks[lead].text == "=" and not any(_is(t, "sym", "=") for t in toks[lead + 1:]):
                if names is not None:
                    names.append(toks[:lead])
                toks = toks[lead + 1:]
            elif _is(toks[lead], "cmd", "in"):
                toks = toks[lead + 1:]
            else:
                return toks
        else:
            return toks


# Commands that may open a name: `\angle PQR = 110^\circ`, `m\angle A`, `\triangle ABC`.
_NAME_PREFIXES = frozenset({"angle", "measuredangle", "triangle"})
_NAME_ACCENTS = frozenset({"overline", "bar", "vec", "hat"})  # `\overline{AB} = 5`


def _skip_spaces(toks: list[Token], i: int) -> int:
    while i < len(toks) and toks[i].kind == "space":
        i += 1
    return i


def _letters_only(toks: list[Token]) -> bool:
    solid = [t for t in toks if t.kind != "space"]
    return bool(solid) and all(t.kind == "word" and not t.in_text for t in solid)


def _name_base(toks: list[Token], i: int) -> int:
    """End of the name's base at `i` (see `_name_end`), or -1."""
    n, t = len(toks), toks[i]
    if t.kind == "cmd" and t.text in _NAME_ACCENTS and i + 1 < n and _is(toks[i + 1], "sym", "{"):
        close = _closing(toks, i + 1)
        return close + 1 if close > 0 and _letters_only(toks[i + 2 : close]) else -1
    if t.kind == "cmd" and t.text in FUNCTIONS:  # `\cos A`, `\sin(\theta)`: a function of a name
        j = _skip_spaces(toks, i + 1)
        if j < n and _is(toks[j], "sym", "("):
            close = _closing(toks, j)
            return close + 1 if close > 0 else -1
        inner = _name_end(toks[j:]) if j < n and not (toks[j].kind == "cmd" and toks[j].text in FUNCTIONS) else 0
        return j + inner if inner else -1
    if (t.kind == "word" and not t.in_text and t.text not in FUNCTIONS) or (t.kind == "cmd" and t.text in GREEK):
        return i + 1
    if t.kind == "word" and t.in_text:  # `\text{Area}`, `\text{total cost}`
        while i < n and ((toks[i].kind == "word" and toks[i].in_text) or toks[i].kind == "space"):
            i += 1
        return i
    if _is(t, "sym", "["):  # `[ABC]`, `[\triangle ABC]`: an area
        close = _closing(toks, i)
        inner = _trim(toks[i + 1 : close]) if close > 0 else []
        return close + 1 if inner and inner[0].kind in ("word", "cmd") and _name_end(inner) == len(inner) else -1
    if _is(t, "sym", "|"):  # `|z|`, `|AB|`
        k = next((k for k in range(i + 1, n) if _is(toks[k], "sym", "|")), -1)
        inner = _trim(toks[i + 1 : k]) if k > 0 else []
        return k + 1 if inner and _name_end(inner) == len(inner) else -1
    return -1


def _inverse_or_prime(toks: list[Token]) -> bool:
    solid = [t for t in toks if t.kind != "space"]
    return [t.text for t in solid] == ["-", "1"] or (bool(solid) and all(_is(t, "cmd", "prime") for t in solid))


def _name_end(toks: list[Token]) -> int:
    """End of a leading name and the spaces after it, else 0. A name is what an answer may write
    before `=` to say what its value is: a letter or a run of letters (`x`, `AB`, `PQR`), a Greek
    letter, words in `\\text{}` (`\\text{Area}`), an area `[ABC]`, `|z|`, `\\overline{AB}`, after
    `\\angle` / `m\\angle` / `\\triangle`, a function of one (`\\cos A`, `\\sin(\\theta)`); then
    subscripts, primes and arguments (`a_{n}`, `f'(x)`, `f(3)`, `E[X]`, `P(A \\cap B)`). Never a
    number, a sum, a product with a number, or a power: `2x = 4` and `x^2 = 4` are equations."""
    n, i = len(toks), 0
    if not toks:
        return 0
    if n >= 2 and _is(toks[0], "word", "m") and not toks[0].in_text and _is(toks[1], "cmd") \
            and toks[1].text in ("angle", "measuredangle"):
        i = 1
    if _is(toks[i], "cmd") and toks[i].text in _NAME_PREFIXES:
        i = _skip_spaces(toks, i + 1)
        if i >= n:
            return 0
    i = _name_base(toks, i)
    if i < 0:
        return 0
    while i < n:
        t = toks[i]
        if _is(t, "sym", "_") and i + 1 < n:
            i = _closing(toks, i + 1) + 1 if _is(toks[i + 1], "sym", "{") else i + 2
            if i <= 0:
                return 0
        elif _is(t, "sym", "'"):
            i += 1
        elif (_is(t, "sym", "^") and i + 1 < n and _is(toks[i + 1], "sym", "{")
              and (close := _closing(toks, i + 1)) > 0 and _inverse_or_prime(toks[i + 2 : close])):
            i = close + 1  # `f^{-1}(3)`, `f^{\prime}(x)`; never a power (`x^2 = 4` is an equation)
        elif t.kind == "sym" and t.text in "([":
            close = _closing(toks, i)
            if close < 0 or not _arguments(toks[i + 1 : close]):
                return 0
            i = close + 1
        else:
            break
    return _skip_spaces(toks, i)


_ARGUMENT_COMMANDS = frozenset({"cap", "cup", "mid", "le", "leq", "ge", "geq", "lt", "gt", "prime", "infty"})


def _arguments(toks: list[Token]) -> bool:
    """Whether a name's arguments are names, numbers and relations between them (`f(x)`, `f(-1)`,
    `P(A \\cap B)`, `P(X = 3)`, `P(\\text{sum} = 7)`, `E[X]`): never a sum or a product, so
    `x(y - 9) = 0` is an equation."""
    solid = [t for t in toks if t.kind != "space"]
    for k, t in enumerate(solid):
        if t.kind == "word" or (t.kind == "num" and not t.in_text):
            continue
        if t.kind == "cmd" and (t.text in GREEK or t.text in _ARGUMENT_COMMANDS):
            continue
        if t.kind == "sym" and (t.text in ",|=<>'_{}" or (t.text == "-" and (k == 0 or _is(solid[k - 1], "sym", ",")))):
            continue
        return False
    return bool(solid)


def _is_variable(toks: list[Token]) -> bool:
    toks = _trim(toks)
    return bool(toks) and _leading_variable(toks) == len(toks)


def _named_tuple(toks: list[Token]) -> int | None:
    """Where the value starts after a tuple of variables and the only `=`: `(x, y) = (4, -3)`."""
    if not (toks and _is(toks[0], "sym", "(")):
        return None
    close = _closing(toks, 0)
    names = _split_top(toks[1:close], lambda t: _is(t, "sym", ",")) if close > 0 else []
    rest = _trim(toks[close + 1:]) if close > 0 else []
    if len(names) < 2 or not all(map(_is_variable, names)) or not rest or not _is(rest[0], "sym", "="):
        return None
    if sum(1 for t in toks if _is(t, "sym", "=")) != 1:
        return None
    return len(toks) - len(rest) + 1


def _leading_variable(toks: list[Token]) -> int:
    """End of a leading single-letter variable or Greek letter (with a subscript) and spaces, else 0:
    `\\theta = 65^\\circ` names its value as `x = 5` does."""
    if not toks or not ((toks[0].kind == "word" and len(toks[0].text) == 1 and not toks[0].in_text)
                        or (toks[0].kind == "cmd" and toks[0].text in GREEK)):
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


def _strip_unit(toks: list[Token]) -> tuple[list[Token], list[Token]] | None:
    """(`toks` without its trailing unit, the unit's tokens): a power after it, units before it
    joined by `per` or `/`; None when it does not end in a unit with a value before it."""
    base = _trim(_strip_exponent(toks))
    if len(base) < 2 or not _is_unit(base[-1]):
        return None
    rest = _trim(base[:-1])
    if rest and (_is(rest[-1], "sym", "/") or (rest[-1].kind == "word" and rest[-1].text in UNIT_JOINERS)):
        before = _trim(rest[:-1])
        inner = _strip_unit(before) if before else None
        return (inner[0], toks[len(inner[0]):]) if inner else None
    return rest, toks[len(rest):]


def unit_name(toks: list[Token]) -> str:
    """The one name of a unit's tokens: synonyms alike (`UNIT_NAMES`), `square cm` as `cm^2`,
    `per` as `/`; "" for a generic `units`."""
    parts, power = [], None
    for i, t in enumerate(toks):
        if t.kind == "word" and t.text in UNIT_POWERS and i + 1 < len(toks):
            power = UNIT_POWERS[t.text]
        elif t.kind == "word" and t.text in GENERIC_UNITS:
            return ""
        elif t.kind == "word":
            name = "/" if t.text in UNIT_JOINERS else UNIT_NAMES.get(t.text, t.text)
            parts.append(name + (f"^{power}" if power and name != "/" else ""))
            power = None
        elif t.kind == "num" and parts:
            parts[-1] += "^" + t.text
        elif _is(t, "sym", "/"):
            parts.append("/")
    name = " ".join(parts)
    return UNIT_ABBREVIATIONS.get(name, name)


def _strip_decorations(toks: list[Token]) -> tuple[list[Token], bool, list[str]]:
    """Trailing `%`, degrees and units -> (what is left, whether a `%` was there, the units' names)."""
    percent, units = False, []
    while True:
        toks = _trim(toks)
        if len(toks) < 2:
            return toks, percent, units
        last = toks[-1]
        if last.kind == "percent":
            percent, toks = True, toks[:-1]
            units.append("%")
        elif _is(last, "cmd", "circ") or _is(last, "cmd", "degree"):
            toks = toks[:-2] if len(toks) > 2 and _is(toks[-2], "sym", "^") else toks[:-1]
            units.append("degree")
        elif (len(toks) >= 4 and _is(last, "sym", "}") and _is(toks[-2], "cmd", "circ") and _is(toks[-3], "sym", "{")
              and _is(toks[-4], "sym", "^")):
            toks = toks[:-4]
            units.append("degree")
        elif last.kind == "word" and last.in_text and last.text in PERCENT_WORDS and len(_trim(toks[:-1])) > 0:
            percent, toks = True, toks[:-1]
            units.append("percent")
        elif (stripped := _strip_unit(toks)) is not None:
            toks = stripped[0]
            units.append(unit_name(stripped[1]))
        else:
            return toks, percent, units


# ----------------------------------------------------------------------------- values


def _number(toks: list[Token], percent: bool) -> Number | None:
    """A plain number, read exactly, or None."""
    mixed = _mixed_slash(toks)
    if mixed is not None:
        return Number(mixed, None, percent)
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


def _mixed_slash(toks: list[Token]) -> Fraction | None:
    """`3\\ 5/6`, `3\\,5/6`, `3 5/6`: a whole number, a space, then a proper fraction a/b (0 < a < b),
    signed; None when not of that form (`35/6`, `3 \\cdot 5/6`, `3 7/6`, `2 1/2.5` are not)."""
    sign, i = (-1, 1) if toks and _is(toks[0], "sym", "-") else (1, 0)
    if not (len(toks) >= i + 5 and toks[i].kind == "num" and toks[i + 1].kind == "space"):
        return None
    tail = toks[_skip_spaces(toks, i + 1):]
    if not (len(tail) == 3 and tail[0].kind == "num" and _is(tail[1], "sym", "/") and tail[2].kind == "num"):
        return None
    whole, a, b = toks[i].text, tail[0].text, tail[2].text
    if not (whole.isdigit() and a.isdigit() and b.isdigit()) or "0" in (whole[0], a[0], b[0]) or not int(a) < int(b):
        return None  # `24 01/100` is no fraction anyone writes
    return sign * (int(whole) + Fraction(int(a), int(b)))


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
    words, letters, depth, prev_num, sub_depth = set(), set(), {"(": 0, "[": 0, "{": 0}, False, []
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
            if t.text not in FUNCTIONS and not t.in_text:
                letters.add(t.text)
        elif t.kind == "cmd":
            if t.text not in COMMANDS and t.text not in HEDGE_COMMANDS:
                return Unparsed(f"the command \\{t.text}")
            if t.text in GREEK:
                letters.add(t.text)
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
    numeric = None if letters - CONSTANTS or equations else numeric_value(toks)
    return Expr(latex, key, frozenset(words), key_only=based, equations=equations, letters=frozenset(letters),
                numeric=numeric)


# ----------------------------------------------------------------------------- numeric value

CONSTANTS = frozenset({"e", "i"})  # letters that are no variable: Euler's number and the imaginary unit
_FUNCTION_VALUES = {
    "ln": math.log, "exp": math.exp, "sin": math.sin, "cos": math.cos, "tan": math.tan,
    "cot": lambda x: 1 / math.tan(x), "sec": lambda x: 1 / math.cos(x), "csc": lambda x: 1 / math.sin(x),
    "arcsin": math.asin, "arccos": math.acos, "arctan": math.atan, "sinh": math.sinh, "cosh": math.cosh,
    "tanh": math.tanh, "log": math.log10,  # `\log` is base 10, as math-verify reads it
}
_MAX_NESTING = 40  # deeper expressions get no numeric value (they are compared by math-verify alone)


class _NoValue(Exception):
    """The expression has no numeric value the evaluator can vouch for."""


class _Evaluator:
    """A variable-free expression's value as a float, read exactly as math-verify's LaTeX parser reads
    it, or `_NoValue` wherever the two could differ: a function's bare argument followed by a product
    (`\\ln 2 \\cdot 3` is ln 6 there), a product after `/` (`1/2\\pi`), a power of a power, a number
    right after a value (`\\sqrt{2}3`), `!`, `|...|`, `\\infty`, `i`, a variable."""

    def __init__(self, toks: list[Token]):
        self.toks = [t for t in toks if t.kind != "space"]
        self.i = 0
        self.depth = 0

    def peek(self, kind: str, text: str | None = None) -> bool:
        return self.i < len(self.toks) and _is(self.toks[self.i], kind, text)

    def take(self, kind: str, text: str | None = None) -> Token:
        if not self.peek(kind, text):
            raise _NoValue
        self.i += 1
        return self.toks[self.i - 1]

    def value(self) -> float:
        v = self.sum()
        if self.i != len(self.toks):
            raise _NoValue
        return v

    def sum(self) -> float:
        self.depth += 1
        if self.depth > _MAX_NESTING:
            raise _NoValue
        total, first = 0.0, True
        while True:
            if self.peek("sym", "+") or self.peek("sym", "-"):
                sign = 1.0 if self.take("sym").text == "+" else -1.0
            elif first:
                sign = 1.0
            else:
                break
            total += sign * self.product()
            first = False
        self.depth -= 1
        return total

    def _starts_factor(self) -> bool:
        if self.i >= len(self.toks):
            return False
        t = self.toks[self.i]
        return (t.kind in ("num", "word") or (t.kind == "cmd" and t.text not in ("cdot", "times", "div"))
                or (t.kind == "sym" and t.text in "({"))

    def product(self) -> float:
        v, bare = self.power()
        after_division = False
        while True:
            if self.peek("cmd", "cdot") or self.peek("cmd", "times") or self.peek("sym", "*"):
                if bare:
                    raise _NoValue  # `\ln 2 \cdot 3`: the parser reads ln(6)
                self.i += 1
                w, bare = self.power()
                v *= w
            elif self.peek("sym", "/") or self.peek("cmd", "div"):
                if bare:
                    raise _NoValue
                self.i += 1
                w, bare = self.power()
                v /= w
                after_division = True
            elif self._starts_factor():
                if bare or after_division or self.peek("num"):
                    raise _NoValue  # `\sin 2\pi`, `1/2\pi`, `\sqrt{2}3`: read otherwise, or unclear
                w, bare = self.power()
                v *= w
            else:
                return v

    def power(self) -> tuple[float, bool]:
        """A factor and its exponent; and whether it was a function of a bare argument."""
        base, bare = self.atom()
        if not self.peek("sym", "^"):
            return base, bare
        if bare:
            raise _NoValue
        self.i += 1
        exponent, _ = self.atom()
        if self.peek("sym", "^") or self.peek("sym", "!") or abs(exponent) > 1000:
            raise _NoValue
        if base < 0 and exponent != int(exponent):
            raise _NoValue
        return math.pow(base, exponent), False

    def group(self, opener: str, closer: str) -> float:
        self.take("sym", opener)
        v = self.sum()
        self.take("sym", closer)
        return v

    def atom(self) -> tuple[float, bool]:
        self.depth += 1  # `\ln \ln \ln 2`: functions nest without a sum between them
        try:
            return self._atom()
        finally:
            self.depth -= 1

    def _atom(self) -> tuple[float, bool]:
        if self.i >= len(self.toks) or self.depth > 2 * _MAX_NESTING:
            raise _NoValue
        t = self.toks[self.i]
        if t.kind == "num":
            self.i += 1
            parsed = parse_number(t.text)
            if parsed is None:
                raise _NoValue
            return float(parsed[0]), False
        if _is(t, "sym", "("):
            return self.group("(", ")"), False
        if _is(t, "sym", "{"):
            return self.group("{", "}"), False
        if _is(t, "word", "e") and not t.in_text:
            self.i += 1
            return math.e, False
        if t.kind == "cmd":
            self.i += 1
            if t.text == "pi":
                return math.pi, False
            if t.text == "frac":
                num = self.group("{", "}")
                return num / self.group("{", "}"), False
            if t.text == "sqrt":
                index = self.group("[", "]") if self.peek("sym", "[") else 2.0
                radicand = self.group("{", "}")
                if radicand < 0 or index != int(index) or index < 2:
                    raise _NoValue
                return radicand ** (1 / index), False
            if t.text in _FUNCTION_VALUES:
                return self.function(t.text)
        raise _NoValue

    def function(self, name: str) -> tuple[float, bool]:
        f = _FUNCTION_VALUES[name]
        if self.peek("sym", "_"):  # `\log_{2} 8`
            if name != "log":
                raise _NoValue
            self.i += 1
            base = self.group("{", "}")
            f = lambda x: math.log(x) / math.log(base)  # noqa: E731
        if self.peek("sym", "(") or self.peek("sym", "{"):
            return f(self.group(*(("(", ")") if self.peek("sym", "(") else ("{", "}")))), False
        argument, _ = self.atom()  # `\ln 2`, `\sin \frac{\pi}{6}`: one atom, and nothing may follow it
        return f(argument), True


def numeric_value(toks: list[Token]) -> float | None:
    """The value of a variable-free expression as a float (`_Evaluator`), or None when it has none
    that can be vouched for. Used to check an approximation (`\\frac{\\pi}{4} \\approx 0.785`) and,
    in `tandem.grading.compare`, to call two clearly different values unequal without math-verify."""
    try:
        v = _Evaluator(toks).value()
    except (_NoValue, ArithmeticError, ValueError, TypeError, RecursionError):
        return None
    return v if math.isfinite(v) else None


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
        inner = _trim(toks[1:-1])
        while len(inner) >= 2 and _is(inner[0], "sym", "{") and _closing(inner, 0) == len(inner) - 1:
            inner = _trim(inner[1:-1])  # `\{{4, 5}\}`: a group inside the braces is presentation
        items = _split_top(inner, lambda t: _is(t, "sym", ",") or _is(t, "sym", ";"))
        return Seq("{", "}", tuple(_value(p) for p in items))
    if not (_is(first, "sym") and first.text in "([" and _is(last, "sym") and last.text in ")]"):
        return None
    if _closing(toks, 0) != len(toks) - 1:
        return None
    items = _split_top(toks[1:-1], lambda t: _is(t, "sym", ",") or _is(t, "sym", ";"))
    if len(items) == 1:  # grouping: `(2.5)` is 2.5; nested groups peeled in a loop, not by recursion
        inner = _trim(toks[1:-1])
        while (len(inner) >= 2 and _is(inner[0], "sym", "(") and _is(inner[-1], "sym", ")")
               and _closing(inner, 0) == len(inner) - 1):
            inner = _trim(inner[1:-1])
        return _value(inner)
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


def _measured(value: Value, units: list[str]) -> Value:
    """A number or expression with its unit's one name (several units: joined; `%` and the
    word `percent` both as `%`, the word also flagged)."""
    names: list[str] = []
    for u in reversed(units):  # in writing order; `square` then `cm` is `cm^2`
        if names and names[-1] in UNIT_POWERS and u:
            u = f"{u}^{UNIT_POWERS[names.pop()]}"
        if u:
            names.append(u)
    word = "percent" in names
    if word and not isinstance(value, Number):
        return Unparsed("the word 'percent' after a value that is not a number")
    unit = " ".join("%" if u == "percent" else u for u in names)
    if isinstance(value, Number):
        return replace(value, unit=unit, percent_word=word)
    return replace(value, unit=unit) if isinstance(value, Expr) else value  # other values: units dropped, as before


def _value(toks: list[Token], names: list | None = None) -> Value:
    currency: list[str] = []
    toks = _unwrap(toks, currency, names)
    if not toks:
        return Unparsed("nothing to read")
    toks, percent, units = _strip_decorations(toks)
    return _measured(_bare_value(toks, percent), units + currency)


def _all_but(toks: list[Token]) -> Value | None:
    """`\\mathbb{R} \\setminus \\{a\\}` as `(-\\infty, a) \\cup (a, \\infty)`; None when not of that form."""
    solid = [t for t in toks if t.kind != "space"]
    if not (len(solid) >= 7 and _is(solid[0], "cmd", "mathbb") and [t.text for t in solid[1:4]] == ["{", "R", "}"]
            and _is(solid[4], "cmd", "setminus") and solid[5].kind == "lset" and solid[-1].kind == "rset"):
        return None
    inner = solid[6:-1]
    if _split_top(inner, lambda t: _is(t, "sym", ",")) != [inner]:
        return None  # one point only
    a = _value(inner)
    if not _single(a):
        return None
    inf, neg_inf = Expr("\\infty", "\\infty", frozenset()), Expr("-\\infty", "-\\infty", frozenset())
    return Union((Seq("(", ")", (neg_inf, a)), Seq("(", ")", (a, inf))))


def _lettered(toks: list[Token]) -> Value | None:
    """`(B) 18`, `\\textbf{(B) }18`: a choice letter A-E with its value (one number or expression)."""
    solid = [t for t in toks if t.kind != "space"]
    if not (len(solid) >= 4 and _is(solid[0], "sym", "(") and solid[1].kind == "word" and solid[1].text in tuple("ABCDE")
            and _is(solid[2], "sym", ")")):
        return None
    value = _value(toks[toks.index(solid[2]) + 1:])
    return Choice(solid[1].text, value) if _single(value) else None


def _named(toks: list[Token]) -> str:
    """The name an item gives its value (`y = -3` -> "y", `AB = 5` -> "AB"), or ""."""
    toks = _trim(toks)
    lead = _name_end(toks)
    if not lead or lead >= len(toks) or not _is(toks[lead], "sym", "="):
        return ""
    return "".join(t.text for t in toks[:lead] if t.kind != "space")


def _bare_value(toks: list[Token], percent: bool) -> Value:
    toks = _merge_thousands(_trim(toks))
    if not toks:
        return Unparsed("nothing to read")
    for reader in (_matrix, _all_but, _lettered):
        found = reader(toks)
        if found is not None:
            return found
    unions = _split_top(toks, lambda t: _is(t, "cmd", "cup"))
    if len(unions) > 1:
        return Union(tuple(_value(p) for p in unions))
    items = _split_top(toks, lambda t: _is(t, "sym", ",") or _is(t, "sym", ";"))
    if len(items) > 1:
        names = [_named(p) for p in items]
        if all(names) and len(set(names)) == len(names):  # `x = 4, y = -3`
            return Seq("(", ")", tuple(_value(p) for p in items), named=True)
        return Seq("", "", tuple(_value(p) for p in items))
    sides = _split_top(toks, lambda t: _is(t, "sym", "="))
    if len(sides) > 2 and 0 < _name_end(_trim(sides[0])) == len(_trim(sides[0])):
        return Chain(tuple(_value(p) for p in sides[1:]))  # `AB = \sqrt{52} = 2\sqrt{13}`
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
        [c for r in value.rows for c in r] if isinstance(value, Matrix) else
        value.sides if isinstance(value, Chain) else ())
    return any(has_unparsed(p) for p in parts)


@lru_cache(maxsize=4096)
def parse_answer(s: str) -> Answer:
    """The value of answer string `s` (see the module docstring); never raises for a string."""
    toks = tokenize(s)
    if isinstance(toks, Unreadable):
        return Answer(Unparsed(toks.reason), frozenset())
    toks = _list_joiners(_end_of_sentence(toks))
    try:
        found = _exact_before_approximation(toks)
        if found is None:
            found = _solutions(toks)
    except RecursionError:
        return Answer(Unparsed("nested too deeply"), _hedges(toks))
    if found is not None:
        return found
    names: list = []
    try:
        value = _value(toks, names)
    except RecursionError:  # groups nested hundreds deep: no answer a model commits to
        return Answer(Unparsed("nested too deeply"), _hedges(toks))
    return Answer(value, _hedges(toks), _equation(names[0], value) if names else None)


def _equation(name: list[Token], value: Value) -> Expr | None:
    """`y = 2x + 1` as one equation: the name, `=`, and the value after it (a number or an expression)."""
    if not (isinstance(value, Number) and not value.percent) and not (isinstance(value, Expr) and not value.equations):
        return None
    name = _trim(name)
    words = {t.text for t in name if t.kind == "word" and len(t.text) > 1 and t.text not in FUNCTIONS}
    latex = _serialize(name).strip() + " = " + value.latex
    key = "".join(t.text if t.kind != "cmd" else "\\" + t.text for t in name if t.kind != "space") + "=" + (
        value.key if isinstance(value, Expr) else value.latex)
    letters = value.letters if isinstance(value, Expr) else frozenset()
    return Expr(latex, key, frozenset(words) | (value.words if isinstance(value, Expr) else frozenset()),
                equations=1, unit=value.unit, letters=letters)


def holds_variable(value: Value) -> bool:
    """Whether a value is an expression in a variable (`2x + 1`; not `e^2`, `3 - 4i`, `\\pi`)."""
    return isinstance(value, Expr) and bool(value.letters - CONSTANTS)


def _single(value: Value) -> bool:
    return isinstance(value, (Number, Expr)) and not (isinstance(value, Expr) and value.equations)


def _top_level(toks: list[Token], test) -> list[int]:
    depth, found = 0, []
    for i, t in enumerate(toks):
        if (t.kind == "sym" and t.text in "([{") or t.kind in ("lset", "begin"):
            depth += 1
        elif (t.kind == "sym" and t.text in ")]}") or t.kind in ("rset", "end"):
            depth -= 1
        elif depth == 0 and test(t):
            found.append(i)
    return found


def _solutions(toks: list[Token]) -> Answer | None:
    """Solutions joined by `or` / `and` (`x = 7 \\text{ or } x = -7`, `4 \\text{ and } -9`), or
    `a \\pm b` (`\\pm 7`, `1 \\pm \\sqrt{5}`): the list of the values, compared as a list is.
    Only where every part is one value (a number or an expression, an `x =` before it allowed)
    and a `\\pm` term is a single term; otherwise None, and the words stay hedges. Against a
    single gold the list is still `hedged` (`5 \\text{ or } 6` for 5)."""
    if any(t.kind == "cmd" and t.text in ("boxed", "fbox") for t in toks):
        return None  # a box inside other content stays unparsed
    parts = _split_top(toks, lambda t: t.kind == "word" and t.text.lower() in ("or", "and"))
    if len(parts) > 1:
        values = tuple(_value(p) for p in parts)
        rest = _hedges(toks) - {"or", "and"}
        joiners = {t.text.lower() for t in toks if t.kind == "word" and t.text.lower() in ("or", "and")}
        if joiners == {"or"} and all(_inequality(_trim(p)) is not None for p in parts):
            return Answer(Union(values), rest)  # `x < 2 \\text{ or } x > 7`: the union of the intervals
        names = [_named(p) for p in parts]
        if joiners == {"and"} and all(names) and len(set(names)) == len(names) and all(map(_single, values)):
            return Answer(Seq("(", ")", values, named=True), rest)  # `x = -6 \\text{ and } y = 10`: a tuple
        return Answer(Seq("", "", values), rest) if all(map(_single, values)) else None
    signs = _top_level(toks, lambda t: _is(t, "cmd", "pm"))
    if len(signs) != 1:
        return None
    left, right = _trim(toks[: signs[0]]), _trim(toks[signs[0] + 1 :])
    if not right or _top_level(right, lambda t: _is(t, "sym", "+") or _is(t, "sym", "-")):
        return None  # `a \\pm b + c`: not one term after the sign
    plus, minus = left + [Token("sym", "+")] + right, left + [Token("sym", "-")] + right
    values = (_value(plus if left else right), _value(minus))
    return Answer(Seq("", "", values), _hedges(toks) - {"pm"}) if all(map(_single, values)) else None


def _approximation_parts(toks: list[Token]) -> tuple[list[Token], list[Token]] | None:
    """(the exact part, the approximation) of `a \\approx d` or `a \\ (\\approx d)`, one `\\approx` only."""
    parts = _split_top(toks, lambda t: _is(t, "cmd", "approx"))
    if len(parts) == 2:
        return parts[0], parts[1]
    toks = _trim(toks)
    if len(parts) != 1 or not toks or not _is(toks[-1], "sym", ")"):
        return None
    stack = []
    for j, t in enumerate(toks[:-1]):
        if (t.kind == "sym" and t.text in "([{") or t.kind in ("lset", "begin"):
            stack.append(j)
        elif ((t.kind == "sym" and t.text in ")]}") or t.kind in ("rset", "end")) and stack:
            stack.pop()
    if not stack or not _is(toks[stack[-1]], "sym", "("):
        return None
    inner = _trim(toks[stack[-1] + 1 : -1])
    if not inner or not _is(inner[0], "cmd", "approx") or any(_is(t, "cmd", "approx") for t in inner[1:]):
        return None
    return toks[: stack[-1]], inner[1:]


def _approximate_values(value: Value) -> list[float] | None:
    """The float value of an exact number or a variable-free expression (of each side of a chain)."""
    if isinstance(value, Number) and value.decimals is None and not value.percent:
        return [float(value.value)]
    if isinstance(value, Expr) and value.numeric is not None:
        return [value.numeric]
    if isinstance(value, Chain):
        sides = [_approximate_values(side) for side in value.sides]
        return None if None in sides else [v for side in sides for v in side]
    return None


def _rounds_to(value: Fraction | float, decimal: Fraction, places: int) -> bool:
    """Whether `decimal` is `value` rounded or cut (towards zero) to `places` places; a float value
    with a margin for its own error (1e-9 of a unit in the last place)."""
    x, d = value * 10**places, decimal * 10**places  # d is a whole number
    slack = 0 if isinstance(value, Fraction) else 1e-9 * max(1.0, abs(x))
    gap = x - d
    rounded = abs(gap) <= Fraction(1, 2) + slack
    cut = (-slack <= gap < 1 + slack) if x >= 0 else (-1 - slack < gap <= slack)
    return bool(rounded or cut)


def _exact_before_approximation(toks: list[Token]) -> Answer | None:
    """`\\frac{1}{3} \\approx 0.333`, `2\\sqrt{2} \\approx 2.83`, `y = e^2 \\approx 7.389`,
    `\\frac{\\pi}{4} \\ (\\approx 0.785)`: the exact value (a name before it allowed), when the
    decimal after it is that value rounded or cut to the decimal's places (`_rounds_to`); None
    otherwise, so a wrong approximation, one alone, one after a decimal, or one
    after a value without a numeric value (a variable, `\\infty`) stays a hedge."""
    found = _approximation_parts(toks)
    if found is None:
        return None
    exact, approx = _value(found[0]), _value(found[1])
    if not (isinstance(approx, Number) and approx.decimals is not None and not approx.percent
            and approx.unit in ("", getattr(exact, "unit", ""))):
        return None
    if isinstance(exact, Number) and exact.decimals is None and not exact.percent:
        values = [exact.value]
    else:
        values = _approximate_values(exact)
    if not values or not all(_rounds_to(v, approx.value, approx.decimals) for v in values):
        return None  # not that value to the places written
    return Answer(exact, _hedges(found[0]) | _hedges(found[1]))


def written_key(s: str) -> str:
    """How `s` is written, presentation aside: the key on which a gold outside the grammar is matched."""
    toks = tokenize(s)
    if isinstance(toks, Unreadable):
        return "\0" + s  # never equal to a readable answer's key
    return "".join(t.text if t.kind != "cmd" else "\\" + t.text for t in _trim(_unwrap(_end_of_sentence(toks)))
                   if t.kind != "space")
