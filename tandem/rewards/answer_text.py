"""Where a gold answer first shows in text: the leak rule shared by the eval and the transfer reward.

A handoff or a transfer is only a test of the partner if the partner is not shown the answer.
These are the pure text rules (no torch, no tokenizer): the gold keyed as the grader keys it
(`gold_key`, normalised by `tandem.grading.normalize`), each number the text states read whole with
its sign (`numbers`), and where the key first appears (`first_appearance`, `shows_answer`).
`tandem_eval.core.leak` (the eval's leak fields) and `tandem.rewards.transfer_cut` (the leak-free cut) use
them; the matching rules are these:

A gold whose key is shorter than `MIN_KEY_CHARS` is undetermined (None): a single digit
appears in almost any solution, so it cannot be located reliably; it is counted, never guessed.

A rational gold (an integer, a decimal, or a fraction written `a/b`, `\\frac{a}{b}`, `\\frac ab`,
`\\dfrac`, `\\tfrac`, signed) is found BY VALUE: gold `\\frac{1}{2}` shows as `1/2`, `0.5`, `\\frac12` or
`\\frac{1}{2}`, gold `0.75` as `3/4`. Numbers are read whole (12 is not in 120, 1.2, 12.5 or 12,000),
with thousands separators `,`, `{,}` or `\\,`; a `-`, Unicode minus or en-dash directly before a
number is its sign only where it is not a binary minus or a range (`is_sign`: `5-12`, `5–12` hold 12).
Any other gold is found as text, after the notational variants the grader ignores are made alike
(`_searchable`: `\\sqrt2`, `\\sqrt 2`, `√2`, `sqrt(2)` are `\\sqrt{2}`; `\\pi/4` is `\\frac{\\pi}{4}`),
and only where it stands as a term of its own (`_stands_alone`: not `\\sqrt{2}` in `2\\sqrt{2}` or
`\\frac{\\sqrt{2}}{2}`, not `x^2+1` in `2x^2+1`).

Which side each remaining ambiguity errs on. The transfer cut (`cut_rule=before_answer`) moves back
before any flag, so a false flag only costs it prefix, while a missed leak shows the partner the
answer; the ambiguities that cannot be read from text alone are therefore resolved toward FLAGGING:
- a number that is one term of a longer expression still counts: an exponent (`18^2`, `2^{18}`), a
  fraction's numerator or denominator (`\\frac{18}{5}` shows 18), a coefficient (`18x`), a formula's
  constant (`\\frac{1}{2}bh` shows gold 1/2), a number in a range written `5-12` (shows 12);
- a fraction not in lowest terms states its value (`2/4` shows 1/2); a proper fraction after a whole
  number is read as a mixed number too (`2\\frac{1}{2}` shows 1/2 and 5/2), and `a/b` is read even where
  it is a date or a ratio (`12/25`; a chain `1/2/2020` is not read).
These err toward MISSING (each is a statement that still needs working out, or a reading the grader
would not accept):
- a quotient with an integer value (`\\frac{36}{2}`, `420/10` do not show 18 or 42), like any other
  unevaluated arithmetic (`9 + 9`, `2 \\cdot 9`);
- a subscript index (`x_18`, `a_{18}`, `\\log_{10}`) is a label, not a stated number;
- a decimal approximation (`0.333` for 1/3, `1.414` for `\\sqrt{2}`), a percent for a decimal (`75%`
  for 0.75), a number in words, and values only equal after algebra (`\\sqrt{12}` for `2\\sqrt{3}`);
- a non-numeric gold inside a longer term: after a coefficient (a digit, a variable, a `)`) or as a
  side of a fraction (but a factor written after it, `\\sqrt{2}x`, or a command before it, `\\pi\\sqrt{2}`,
  `2\\cdot\\sqrt{2}`, `\\pm\\sqrt{2}`, still flags: toward flagging);
- a text that only shows the gold in a form the variants do not cover (`15*sqrt(7)` for `15\\sqrt{7}`,
  `\\frac{1}{\\sqrt{2}}` for `\\frac{\\sqrt{2}}{2}`), and a value written as a subscript label
  (`\\underbrace{...}_{18}`).
"""

from __future__ import annotations

import re
from fractions import Fraction

from tandem.grading.normalize import exact_key, normalize_answer
from tandem.grading.tokens import read_unicode

MIN_KEY_CHARS = 2
_BRACED = re.compile(r"([\^_])\{(\w)\}")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_NUMERIC_KEY = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)")
_SEP = r"(?:,|\{,\}|\\,)"  # thousands separators: `70,000`, LaTeX's `70{,}000`, the thin space `70\,000`
# A number written whole: thousands groups, then an optional decimal part, or a bare decimal part
# (`.5`, read as 0.5 by the grader); never part of a longer number.
_NUMBER = re.compile(rf"(?<!\d)(?<!\d\.)(?:(?:\d{{1,3}}(?:{_SEP}\d{{3}})+(?!\d)|\d+)(?:\.\d+)?|(?<![\w.])\.\d+)")
# the ASCII hyphen-minus, the Unicode minus, and the en-dash that copied text uses as a minus
# (a range `5–12` is told apart by `is_sign`, as `5-12` is)
_MINUS = "-\u2212\u2013"
_OPERAND_END = set(")]}")
# what ends the text before an index: `x_18`, `a_{18}`, `\log_{10}` (not markdown's `_18_` or `__18__`)
_SUBSCRIPT = re.compile(r"[A-Za-z0-9}\])]_\s*\{?\s*$")
# a fraction of whole numbers: `\frac{a}{b}` (and `\dfrac`, `\tfrac`, `\cfrac`), TeX's one-digit
# arguments `\frac12`, `\frac 1 2`; `a/b` unless part of a chain (`1/2/2020`) or of a longer number
_SHORT_FRACTION = re.compile(r"\\[dtc]?frac\s*$")
_ARG = r"(?:\{\s*(-?\d+)\s*\}|\s*(\d))"
_TEX_FRACTION = re.compile(rf"\\[dtc]?frac{_ARG}{_ARG}")
_WHOLE_BEFORE = re.compile(r"(?<![\d.,])(\d+)[ \t]*$")  # the whole part of a mixed number, if any
_SLASH_FRACTION = re.compile(r"(?<![\d./])(?<!\d,)(\d+)\s*/\s*(\d+)(?![\d/]|\.\d|,\d{3})")
_TEX_FRACTION_KEY = re.compile(r"(-?)\\frac(?:\{(-?\d+)\}|(\d))(?:\{(-?\d+)\}|(\d))")
_SLASH_KEY = re.compile(r"(-?\d+)/(\d+)")


def gold_key(gold) -> str | None:
    """The gold as the grader keys it, or None where it cannot be detected reliably."""
    try:
        key = exact_key(normalize_answer(str(gold)))
    except Exception:  # noqa: BLE001 - a gold the normaliser cannot read is undetermined, not an error
        return None
    body = key[1:] if _NUMERIC_KEY.fullmatch(key) and key.startswith("-") else key  # a sign is not a digit
    return key if len(body) >= MIN_KEY_CHARS else None


def rational_value(key: str) -> Fraction | None:
    """The value of a key that is a rational number (integer, decimal, `a/b`, `\\frac{a}{b}`, `\\frac ab`,
    signed), or None for any other key (found as text)."""
    if key.startswith("$") and _NUMERIC_KEY.fullmatch(key[1:]):
        key = key[1:]  # a bare currency sign, which the normaliser keeps: `$87.50`
    if _NUMERIC_KEY.fullmatch(key):
        return Fraction(key)
    tex, slash = _TEX_FRACTION_KEY.fullmatch(key), _SLASH_KEY.fullmatch(key)
    if tex:
        sign, num, den = tex.group(1), int(tex.group(2) or tex.group(3)), int(tex.group(4) or tex.group(5))
    elif slash:
        sign, num, den = "", int(slash.group(1)), int(slash.group(2))
    else:
        return None
    # a quotient with an integer value (`\frac{4}{2}`) is matched as written, as `_fractions` reads it in text
    return None if den == 0 or (abs(den) > 1 and num % den == 0) else (-1 if sign else 1) * Fraction(num, den)


def is_sign(text: str, at: int) -> bool:
    """Whether the `-` at `text[at]`, written directly before a number, is its sign and not a binary minus."""
    j = at - 1
    while j >= 0 and text[j].isspace():
        j -= 1
    if j < 0:
        return True
    if text[j].isdigit() or text[j] in _OPERAND_END:
        return False  # `8 -5`, `(a)-5`: subtraction; `5–12`: a range
    if text[j].isalnum():
        return j < at - 1  # `is -5` is a sign; `x-5` a subtraction
    return True  # after `=`, `(`, `,`, an operator...


def _signed(text: str, start: int, value: Fraction) -> tuple[int, Fraction]:
    """(start, value) of a number at `start`, with a minus directly before it taken as its sign (`is_sign`)."""
    if start > 0 and text[start - 1] in _MINUS and is_sign(text, start - 1):
        return start - 1, -value
    return start, value


def _whole_numbers(text: str) -> list[tuple[int, Fraction]]:
    """Each integer or decimal in `text`, signed; an index (`x_18`, `a_{18}`) is a label, not a number stated."""
    out = []
    for m in _NUMBER.finditer(text):
        if _SUBSCRIPT.search(text, max(0, m.start() - 8), m.start()):
            continue
        if _SHORT_FRACTION.search(text, max(0, m.start() - 8), m.start()) and m.group().isdigit():
            # TeX's one-digit arguments: `\frac12` holds 1 and 2, not twelve
            out += [(m.start() + i, Fraction(int(d))) for i, d in enumerate(m.group()[:2])]
            continue
        out.append(_signed(text, m.start(), Fraction(re.sub(r"\{,\}|\\,|,", "", m.group()))))
    return out


def _fractions(text: str) -> list[tuple[int, Fraction]]:
    """Each fraction of whole numbers in `text` (`\\frac{a}{b}` and its variants, `a/b`), signed, as its value.

    A fraction whose value is an integer (`\\frac{36}{2}`, `420/10`) is a division still to be done,
    like `2 \\cdot 9`: it is not read as 18 or 42 (its numerator and denominator are read as numbers).
    A proper fraction right after a whole number is read both ways (`2\\frac{1}{2}`: 1/2 and 5/2).
    """
    found = [(m.start(), int(m.group(1) or m.group(2)), int(m.group(3) or m.group(4)))
             for m in _TEX_FRACTION.finditer(text)]
    found += [(m.start(), int(m.group(1)), int(m.group(2))) for m in _SLASH_FRACTION.finditer(text)]
    out = []
    for start, num, den in found:
        if den == 0 or (abs(den) > 1 and num % den == 0):
            continue
        out.append(_signed(text, start, Fraction(num, den)))
        whole = _WHOLE_BEFORE.search(text, max(0, start - 12), start)
        if whole and 0 < num < den:  # also a mixed number: `2\frac{1}{2}`, `2 1/2` may mean 5/2
            out.append(_signed(text, whole.start(1), int(whole.group(1)) + Fraction(num, den)))
    return out


def numbers(text: str) -> list[tuple[int, Fraction]]:
    """Each number `text` states as (where it starts, its value), in order: integers and decimals read whole,
    and fractions read as their value (see `_fractions`); a minus before one read as its sign where `is_sign`."""
    return sorted(_whole_numbers(text) + _fractions(text), key=lambda hit: hit[0])


def key_pattern(key: str) -> re.Pattern:
    """`key` in free text: spacing between its symbols, digit and letter boundaries at its ends."""
    # spacing may fall between symbols (`\frac{1} {2}`), never inside a number (`1 2` is two numbers)
    body = re.escape(key[0]) + "".join(("" if a.isdigit() and b.isdigit() else r"\s*") + re.escape(b)
                                       for a, b in zip(key, key[1:]))
    head = r"(?<!\d)(?<!\d\.)" if key[0].isdigit() else r"(?<![A-Za-z\\])" if key[0].isalpha() else ""
    tail = r"(?!\d)(?!\.\d)(?!,\d{3})" if key[-1].isdigit() else r"(?![A-Za-z])" if key[-1].isalpha() else ""
    return re.compile(head + body + tail)


def _tex_args(key: str) -> tuple[str, str, str] | None:
    """(sign, numerator, denominator) of a key that is one `\\frac{..}{..}` with braced arguments, else None."""
    m = re.match(r"(-?)\\frac\{", key)
    if not m:
        return None
    args, i = [], m.end() - 1
    for _ in range(2):
        if i >= len(key) or key[i] != "{":
            return None
        depth, j = 0, i
        while j < len(key):  # the matching brace: nested `{}` inside (`\frac{\sqrt{3}}{2}`)
            depth += {"{": 1, "}": -1}.get(key[j], 0)
            if depth == 0:
                break
            j += 1
        args.append(key[i + 1:j])
        i = j + 1
    return (m.group(1), *args) if i == len(key) else None


def _key_forms(key: str) -> list[str]:
    """The key and its other fraction notation: `\\frac{\\pi}{4}` and `\\pi/4`, `(a+b)/2` for `\\frac{a+b}{2}`."""
    def side(s: str) -> str:  # a side with an operator needs brackets to stay one side of `/`
        return f"({s})" if re.search(r"[-+,/ ]|\\frac", s) else s

    forms = [key]
    tex = _tex_args(key)
    if tex:
        forms.append(f"{tex[0]}{side(tex[1])}/{side(tex[2])}")
    slash = re.fullmatch(r"(-?)([^/]+)/([^/]+)", key)
    if slash and not tex:
        forms.append(f"{slash.group(1)}\\frac{{{slash.group(2)}}}{{{slash.group(3)}}}")
    return forms


def _stands_alone(text: str, start: int, end: int, key: str) -> bool:
    """Whether a non-numeric key matched at `text[start:end]` is a term of its own, not a factor of a longer
    term (`2\\sqrt{2}`, `2x^2+1`, `x\\sqrt{2}`, `(a+1)\\sqrt{2}`) or a side of a fraction (`\\frac{\\sqrt{2}}{2}`,
    `\\sqrt{2}/2`, `1/\\sqrt{2}`): those are other values, though they hold the key's text."""
    before, after = text[max(0, start - 8):start], text[end:end + 3].lstrip()
    if key[0] == "\\" or (key[0].isalpha() and not key[1:2].isalpha()):  # a command or a variable, not a word
        if re.search(r"\d[ \t]*$", before):  # a coefficient, spacing allowed: TeX's `2 \sqrt 3` is one term
            return False
        if key[0] == "\\" and (before[-1:] == ")" or re.search(r"(?<![\\A-Za-z])[A-Za-z]+$", before)):
            return False  # a variable or a bracket directly before (a command such as `\pm` or `\quad` is not)
    if re.search(r"(?:\\[dtc]?frac\s*\{|\}\s*\{|/)\s*$", before) or after.startswith(("/", "}{", "} {")):
        return False  # a numerator or denominator
    return True


def _term_matches(text: str, key: str):
    """Where the non-numeric `key` (any of `_key_forms`) stands alone in `text`, in order of its forms."""
    for form in _key_forms(key):
        for m in key_pattern(form).finditer(text):
            if _stands_alone(text, m.start(), m.end(), form):
                yield m.start()


def _searchable(text: str) -> str:
    """The text with the notational variants the grader's normaliser removes made alike."""
    text = read_unicode(text)  # `√2` -> `\sqrt{2}`, Unicode minus and dashes -> `-`
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("{,}", ",")
    text = re.sub(r"\\(?:left|right)(?![A-Za-z])", "", text)
    text = re.sub(r"(?<![A-Za-z])\\?sqrt\s*\(([^()]*)\)", r"\\sqrt{\1}", text)  # sqrt(2), \sqrt (2) from √(2)
    text = re.sub(r"\\sqrt(?![A-Za-z])\s*(\w)", r"\\sqrt{\1}", text)  # TeX's one-token argument: \sqrt2, \sqrt 2
    text = re.sub(r"\\frac(?![A-Za-z])\s*(\\[A-Za-z]+|\w)\s*(\\[A-Za-z]+|\w)", r"\\frac{\1}{\2}", text)  # \frac12
    text = _THOUSANDS.sub("", text)  # 2,125 reads as 2125, as the normaliser reads it
    return _BRACED.sub(r"\1\2", text)


def first_appearance(text: str, key: str) -> int | None:
    """Where in `text` the gold key first appears (the start of the number, sign included), or None.

    Positions are in `text` as given; a non-numeric key is found only where written as the key
    itself or its other fraction form (not through the variants `shows_answer` also accepts).
    A rational key is found by value (`numbers`), the first number equal to it.
    """
    value = rational_value(key)
    if value is not None:
        return next((start for start, v in numbers(text) if v == value), None)
    return min(_term_matches(text, key), default=None)


def shows_answer(text: str, key: str) -> bool:
    """Whether `text` holds the gold key (from `gold_key`): a rational key by value, any other as text."""
    value = rational_value(key)
    if value is not None:
        return any(v == value for _, v in numbers(text))
    return next(_term_matches(_searchable(text), key), None) is not None
