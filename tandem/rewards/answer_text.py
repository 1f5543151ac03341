"""Where a gold answer first shows in text: the leak rule shared by the eval and the transfer reward.

A handoff or a transfer is only a test of the partner if the partner is not shown the answer.
These are the pure text rules (no torch, no tokenizer): the gold keyed as the grader keys it
(`gold_key`, normalised by `tandem.grading.normalize`), each number read whole with its sign
(`numbers`), and where the key first appears (`first_appearance`, `shows_answer`).
`tandem_eval.core.leak` (the eval's leak fields) and `tandem.rewards.transfer_cut` (the leak-free cut) use
them; `tandem_eval.core.leak`'s docstring spells out the matching rules.

A gold whose key is shorter than `MIN_KEY_CHARS` is undetermined (None): a single digit
appears in almost any solution, so it cannot be located reliably; it is counted, never guessed.
"""

from __future__ import annotations

import re
from fractions import Fraction

from tandem.grading.normalize import exact_key, normalize_answer

MIN_KEY_CHARS = 2
_BRACED = re.compile(r"([\^_])\{(\w)\}")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_NUMERIC_KEY = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)")
# A number written whole: thousands groups, then an optional decimal part, or a bare decimal part
# (`.5`, read as 0.5 by the grader); never part of a longer number.
_NUMBER = re.compile(r"(?<!\d)(?<!\d\.)(?:(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|(?<![\w.])\.\d+)")
_MINUS = "-\u2212"  # the ASCII hyphen-minus and the Unicode minus sign, which the grader reads alike
_OPERAND_END = set(")]}")


def gold_key(gold) -> str | None:
    """The gold as the grader keys it, or None where it cannot be detected reliably."""
    try:
        key = exact_key(normalize_answer(str(gold)))
    except Exception:  # noqa: BLE001 - a gold the normaliser cannot read is undetermined, not an error
        return None
    body = key[1:] if _NUMERIC_KEY.fullmatch(key) and key.startswith("-") else key  # a sign is not a digit
    return key if len(body) >= MIN_KEY_CHARS else None


def is_sign(text: str, at: int) -> bool:
    """Whether the `-` at `text[at]`, written directly before a number, is its sign and not a binary minus."""
    j = at - 1
    while j >= 0 and text[j].isspace():
        j -= 1
    if j < 0:
        return True
    if text[j].isdigit() or text[j] in _OPERAND_END:
        return False  # `8 -5`, `(a)-5`: subtraction
    if text[j].isalnum():
        return j < at - 1  # `is -5` is a sign; `x-5` a subtraction
    return True  # after `=`, `(`, `,`, an operator...


def numbers(text: str) -> list[tuple[int, Fraction]]:
    """Each number in `text` as (where it starts, its value), a `-` before it read as its sign where `is_sign`."""
    out = []
    for m in _NUMBER.finditer(text):
        value, start = Fraction(m.group().replace(",", "")), m.start()
        if start > 0 and text[start - 1] in _MINUS and is_sign(text, start - 1):
            value, start = -value, start - 1
        out.append((start, value))
    return out


def first_appearance(text: str, key: str) -> int | None:
    """Where in `text` the gold key first appears (the start of the number, sign included), or None.

    Positions are in `text` as given; a non-numeric key is found only where written as the key
    itself (not through the variants `shows_answer` also accepts).
    """
    if _NUMERIC_KEY.fullmatch(key):
        gold = Fraction(key)
        return next((start for start, value in numbers(text) if value == gold), None)
    m = key_pattern(key).search(text)
    return m.start() if m else None


def key_pattern(key: str) -> re.Pattern:
    """`key` in free text: spacing between its symbols, digit and letter boundaries at its ends."""
    # spacing may fall between symbols (`\frac{1} {2}`), never inside a number (`1 2` is two numbers)
    body = re.escape(key[0]) + "".join(("" if a.isdigit() and b.isdigit() else r"\s*") + re.escape(b)
                                       for a, b in zip(key, key[1:]))
    head = r"(?<!\d)(?<!\d\.)" if key[0].isdigit() else r"(?<![A-Za-z\\])" if key[0].isalpha() else ""
    tail = r"(?!\d)(?!\.\d)(?!,\d{3})" if key[-1].isdigit() else r"(?![A-Za-z])" if key[-1].isalpha() else ""
    return re.compile(head + body + tail)


def _searchable(text: str) -> str:
    """The text with the notational variants the grader's normaliser removes made alike."""
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("{,}", ",")
    text = re.sub(r"\\(?:left|right)(?![A-Za-z])", "", text)
    text = _THOUSANDS.sub("", text)  # 2,125 reads as 2125, as the normaliser reads it
    return _BRACED.sub(r"\1\2", text)


def shows_answer(text: str, key: str) -> bool:
    """Whether `text` holds the gold key (from `gold_key`): a numeric key by value, any other as text."""
    if _NUMERIC_KEY.fullmatch(key):
        return first_appearance(text, key) is not None
    return key_pattern(key).search(_searchable(text)) is not None
