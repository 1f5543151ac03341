"""Tokens: an answer string read character by character, every character accounted for.

`tokenize(s)` returns the answer's tokens, or the first character it cannot account for
(`Unreadable`). Nothing is stripped here except what never carries meaning: math
delimiters (`$`, `\\(`, `\\)`, `\\[`, `\\]`), `\\left` / `\\right` and other sizing, and
spacing. Unicode is read first (`read_unicode`): digits of any script and fullwidth forms
as ASCII, minus and hyphen variants as `-`, superscripts as `^{...}` (never dropped),
vulgar fractions as `\\frac{a}{b}`, and math symbols as their LaTeX commands.

Token kinds: `num` (digits with an optional point and exponent, as written), `word` (a
run of letters; `in_text` when it came from `\\text{}` and its kin), `cmd` (a LaTeX command
name), `sym` (one punctuation character), `lset` / `rset` (`\\{` `\\}`), `space`,
`rowsep` (`\\\\`), `percent`, `dollar`, `begin` / `end` (an environment's name).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from fractions import Fraction

from tandem.grading.lexicon import ARGUMENT_COUNTS, INVISIBLE_COMMANDS, SAME_COMMANDS, SPACING_COMMANDS, TEXT_COMMANDS

SYMBOLS = frozenset("+-*/^_=()[]{},;|!'<>:&.")
# Upright letters that are constants, read as the plain letter: `2 - 3\mathrm{i}` is `2 - 3i`.
_UPRIGHT_CONSTANTS = frozenset({"i", "e"})
_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾", "0123456789+-=()"))
_SUBSCRIPTS = dict(zip("₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎", "0123456789+-=()"))
_MINUS = frozenset("\u2010\u2011\u2012\u2013\u2043\u2212\ufe63\uff0d")
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff")
_SYMBOL_COMMANDS = {
    "×": "\\times ", "÷": "\\div ", "·": "\\cdot ", "⋅": "\\cdot ", "π": "\\pi ", "∞": "\\infty ",
    "≤": "\\le ", "≥": "\\ge ", "≠": "\\ne ", "≈": "\\approx ", "±": "\\pm ", "∓": "\\mp ", "∪": "\\cup ",
    "∩": "\\cap ", "∈": "\\in ", "°": "^\\circ ", "′": "'", "⁄": "/", "∼": "\\sim ", "≅": "\\cong ",
}


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    in_text: bool = False  # a word or number read from inside \text{} and its kin


@dataclass(frozen=True)
class Unreadable:
    """The first thing the tokenizer could not account for."""

    reason: str


def _script_run(s: str, i: int, table: dict[str, str], mark: str) -> tuple[str, int]:
    j = i
    while j < len(s) and s[j] in table:
        j += 1
    return mark + "{" + "".join(table[c] for c in s[i:j]) + "}", j


def _vulgar(ch: str) -> str:
    value = Fraction(unicodedata.numeric(ch)).limit_denominator(10)
    return f"\\frac{{{value.numerator}}}{{{value.denominator}}}"


def _one_char(ch: str) -> str:
    if ch in _MINUS:
        return "-"
    if ch in _ZERO_WIDTH or unicodedata.category(ch) == "Zs":
        return " "
    if ch in _SYMBOL_COMMANDS:
        return _SYMBOL_COMMANDS[ch]
    if unicodedata.category(ch) == "Nd":
        return str(unicodedata.digit(ch))
    if "\uff01" <= ch <= "\uff5e":  # fullwidth ASCII
        return chr(ord(ch) - 0xFEE0)
    name = unicodedata.name(ch, "")
    if name.startswith("VULGAR FRACTION"):
        return _vulgar(ch)
    if name.startswith("GREEK SMALL LETTER ") and len(name.split()) == 4:
        return "\\" + name.split()[-1].lower() + " "
    if name.startswith("GREEK CAPITAL LETTER ") and len(name.split()) == 4:
        return "\\" + name.split()[-1].capitalize() + " "
    return ch  # unknown: the tokenizer refuses it


def read_unicode(s: str) -> str:
    """Unicode math as ASCII LaTeX (see the module docstring); unknown characters kept as they are."""
    if s.isascii():
        return s
    out, i = [], 0
    while i < len(s):
        ch = s[i]
        if ch in _SUPERSCRIPTS:
            text, i = _script_run(s, i, _SUPERSCRIPTS, "^")
        elif ch in _SUBSCRIPTS:
            text, i = _script_run(s, i, _SUBSCRIPTS, "_")
        elif ch == "√":  # √23 is the root of 23, not (√2)3
            j = i + 1
            while j < len(s) and s[j].isdigit():
                j += 1
            text, i = ("\\sqrt{" + s[i + 1 : j] + "}", j) if j > i + 1 else ("\\sqrt ", i + 1)
        else:
            text, i = _one_char(ch), i + 1
        out.append(text)
    return "".join(out)


def _matching_brace(s: str, i: int) -> int:
    """Index of the `}` closing the `{` at `i`, or -1 (escaped braces skipped)."""
    depth, j = 0, i
    while j < len(s):
        if s[j] == "\\":
            j += 2
            continue
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def _number_end(s: str, i: int) -> int:
    """End of the number starting at `i`: digits [. digits] [e[+-]digits]; `1.` only before `/` or `\\overline`."""
    j = i
    while j < len(s) and s[j].isdigit():
        j += 1
    if j < len(s) and s[j] == ".":
        k = j + 1
        while k < len(s) and s[k].isdigit():
            k += 1
        if k > j + 1 or (j > i and (s[k : k + 1] == "/" or s.startswith("\\overline", k))):
            j = k
    if j > i and s[j : j + 1] in ("e", "E"):
        k = j + 1 + (s[j + 1 : j + 2] in ("+", "-"))
        m = k
        while m < len(s) and s[m].isdigit():
            m += 1
        if m > k and not (m < len(s) and s[m].isalpha()):
            j = m
    return j


def _command(s: str, i: int, in_text: bool, out: list[Token]) -> int | Unreadable:
    """Read the backslash sequence at `i` into `out`; return the index after it."""
    nxt = s[i + 1 : i + 2]
    if not nxt:
        return Unreadable("a lone backslash")
    if not nxt.isalpha():
        simple = {"\\": Token("rowsep", "\\\\"), "{": Token("lset", "\\{"), "}": Token("rset", "\\}"),
                  "%": Token("percent", "%"), "$": Token("dollar", "$")}
        if nxt in simple:
            out.append(simple[nxt])
        elif nxt in ",;:! >":
            out.append(Token("space", " "))
        elif nxt in "()[]":
            pass  # math delimiters \( \) \[ \]
        else:
            return Unreadable(f"'\\{nxt}'")
        return i + 2
    j = i + 1
    while j < len(s) and s[j].isalpha():
        j += 1
    name = s[i + 1 : j]
    if name in INVISIBLE_COMMANDS:
        return j + 1 if name in ("left", "right") and s[j : j + 1] == "." else j
    if name in SPACING_COMMANDS:
        out.append(Token("space", " "))
        return j
    k = j
    while k < len(s) and s[k] == " ":
        k += 1
    if name in TEXT_COMMANDS and s[k : k + 1] == "{":
        close = _matching_brace(s, k)
        if close < 0:
            return Unreadable(f"an unclosed \\{name}{{")
        if s[k + 1 : close].strip() in _UPRIGHT_CONSTANTS:  # `\mathrm{i}`, `\mathrm{e}`: the constant, as `i`, `e`
            out.append(Token("word", s[k + 1 : close].strip()))
            return close + 1
        inner = _tokenize(s[k + 1 : close], in_text=True)
        if isinstance(inner, Unreadable):
            return inner
        out.extend(inner)
        return close + 1
    if name in ("begin", "end") and s[k : k + 1] == "{":
        close = s.find("}", k)
        if close < 0:
            return Unreadable(f"an unclosed \\{name}{{")
        out.append(Token(name, s[k + 1 : close].strip()))
        return close + 1
    if name in TEXT_COMMANDS:  # `\rm K`: a font switch, presentation only
        return j
    out.append(Token("cmd", name, in_text))
    return j


def _tokenize(s: str, in_text: bool) -> list[Token] | Unreadable:
    out: list[Token] = []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch == "\\":
            nxt = _command(s, i, in_text, out)
            if isinstance(nxt, Unreadable):
                return nxt
            i = nxt
        elif ch in " \t\n\r~":
            if not out or out[-1].kind != "space":
                out.append(Token("space", " "))
            i += 1
        elif ch == "$":
            i += 1  # a math delimiter; `\$` (currency) is read above
        elif ch.isdigit() or (ch == "." and s[i + 1 : i + 2].isdigit()):
            j = _number_end(s, i)
            out.append(Token("num", s[i:j], in_text))
            i = j
        elif ch.isascii() and ch.isalpha():
            j = i
            while j < len(s) and s[j].isascii() and s[j].isalpha():
                j += 1
            out.append(Token("word", s[i:j], in_text))
            i = j
        elif ch == "%":
            out.append(Token("percent", "%"))
            i += 1
        elif ch in SYMBOLS:
            out.append(Token("sym", ch, in_text))
            i += 1
        else:
            return Unreadable(repr(ch))
    return out


# Tokens that can never be a command's argument: TeX would stop with an error there, so the
# argument is left missing (and the answer reads as whatever is left, usually unparsed).
_NOT_AN_ARGUMENT = frozenset({"space", "rset", "rowsep", "percent", "dollar", "begin", "end"})


def _first_piece(tok: Token) -> tuple[Token, Token | None]:
    """A number or word split after its first character: TeX reads `\\frac{29}4` as one digit."""
    if tok.kind not in ("num", "word") or len(tok.text) == 1:
        return tok, None
    head = tok.text[0]
    kind = "num" if head.isdigit() else ("word" if tok.kind == "word" else "sym")
    return Token(kind, head, tok.in_text), Token(tok.kind, tok.text[1:], tok.in_text)


def braced_arguments(toks: list[Token]) -> list[Token]:
    """TeX's argument rule: every argument of `\\frac`, `\\sqrt`, `^`, `_` (`ARGUMENT_COUNTS`) in braces.

    An argument is one group or one token, spaces before it skipped: `\\frac{29}4` is
    `\\frac{29}{4}`, `\\frac9{19}` is `\\frac{9}{19}`, `\\sqrt2` is `\\sqrt{2}`, `204_5` is
    `204_{5}`, and `\\frac123` is `\\frac{1}{2}3` (as TeX typesets it). So a brace-less gold and
    a braced response (or the reverse) are the same tokens. One pass, no recursion: `owed`
    holds, per open group, how many arguments the last command there still waits for.
    """
    out: list[Token] = []
    owed: list[list] = [[0, None]]  # per level: [arguments owed, the closer that ends the level]
    queue = list(reversed(toks))
    after_sqrt = False
    while queue:
        t = queue.pop()
        level = owed[-1]
        if level[0] > 0 and t.kind == "space":
            continue  # TeX skips spaces before an argument
        if after_sqrt and t.kind == "sym" and t.text == "[":  # `\sqrt[3]{x}`: the optional index first
            out.append(t)
            owed.append([0, "]"])
            after_sqrt = False
            continue
        after_sqrt = False
        if t.kind == "sym" and t.text == "{":
            if level[0] > 0:
                level[0] -= 1
            out.append(t)
            owed.append([0, "}"])
            continue
        if t.kind == "sym" and t.text in "}]" and level[1] == t.text and len(owed) > 1:
            owed.pop()
            out.append(t)
            continue
        if level[0] > 0:
            if t.kind in _NOT_AN_ARGUMENT or (t.kind == "sym" and t.text in "}]"):
                level[0] = 0  # no argument here: TeX would stop; read on as written
            else:
                level[0] -= 1
                head, rest = _first_piece(t)
                out += [Token("sym", "{"), head, Token("sym", "}")]
                if rest is not None:
                    queue.append(rest)
                continue
        out.append(t)
        wants = ARGUMENT_COUNTS.get(t.text, 0) if t.kind == "cmd" else (1 if t.kind == "sym" and t.text in "^_" else 0)
        level[0] = wants
        after_sqrt = t.kind == "cmd" and t.text == "sqrt"
    return out


def tokenize(s: str) -> list[Token] | Unreadable:
    """The tokens of answer `s` (unicode read first, TeX's argument rule applied), or the first
    thing that cannot be read."""
    s = read_unicode(s).replace("{,}", ",").replace("{:}", ":")
    for written, meant in SAME_COMMANDS.items():
        s = s.replace("\\" + written, "\\" + meant)
    toks = _tokenize(s, in_text=False)
    return toks if isinstance(toks, Unreadable) else braced_arguments(toks)
