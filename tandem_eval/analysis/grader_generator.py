"""Wrong and right answers generated from a gold, as a property the grader must keep.

`cases_for(gold, rng)` writes, from one gold, responses a careful human grader would refuse
(`correct=False`) and responses they would pay (`correct=True`), each with its class:

Must not be paid:
- `digit_changed`: one digit of the gold changed;
- `nudged`, `nudged_bracket`, `nudged_gold_bracket`: a number's decimal moved in its 7th to
  12th place, bare, in `( )` / `\\left( \\right)` / `{ }` / `[ ]`, or with the gold so wrapped;
- `nested_box_hedge`, `second_span_hedge`, `second_sentence_hedge`, `text_or_hedge`,
  `second_value_list`: the gold with another value, in each structure that once hid it;
- `text_word`: the gold then a word that is not a unit in `\\text{}` / `\\mbox{}` (`NON_UNITS`);
- `superscript`, `question`, `space_split`: a unicode power, a trailing `?` / `(?)` / `!?`,
  the gold's digits split by a space (never a valid thousands grouping).

Must be paid: `boxed`, `sentence` (after "The answer is"), `unit`, `decimal` (of an exact
value, or at 7 places of a repeating one), `percent` (`25\\%` for 0.25), `unicode_minus`,
`thin_space`, `unicode_digits` (fullwidth and Arabic-Indic), `bracketed` (`(G)`).

`grade_cases(cases)` grades them and counts, per class, the wrong answers paid and the right
answers refused. `scripts/grader_generated.py` runs it on every gold of the shared
benchmarks and the toy task (`model_spec/GRADER.md`).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from tandem.grading.answer import Number, parse_answer

# Words that scale, operate on, doubt or negate a value: never a unit.
NON_UNITS = tuple(
    ("thousand million billion trillion hundred dozen squared cubed times twice double triple half quarter "
     "percent plus minus more less maybe perhaps possibly probably approximately roughly about around nearly "
     "almost not never no none wrong incorrect false unsure guess hmm ish or if unless except only at least "
     "most over under above below divided multiplied added subtracted inverse reciprocal root factorial "
     "negative remainder mod tenths hundredths thousandths millions billions kilo mega giga otherwise else "
     "instead rather doubtful uncertain estimate estimated ballpark give take excluding including minimum maximum "
     "upto lower upper bound limit").split()
)
NUDGE_PLACES = (7, 8, 9, 10, 11, 12)  # the decimal place moved
DIGIT_CHANGES = 5  # digits changed per gold (distinct cases only)
TEXT_WORDS = 40  # non-units tried after each gold
_SUPERSCRIPTS = "²³⁴"
_BRACKETS = (("(", ")"), ("\\left(", "\\right)"), ("{", "}"), ("[", "]"), ("\\left[", "\\right]"))
_FULLWIDTH = {str(d): chr(0xFF10 + d) for d in range(10)}
_ARABIC_INDIC = {str(d): chr(0x0660 + d) for d in range(10)}


@dataclass(frozen=True)
class Case:
    kind: str
    response: str
    gold: str
    correct: bool


def _boxed(answer: str) -> str:
    return f"So the final answer is $\\boxed{{{answer}}}$."


def _digit_changed(gold: str, rng: random.Random) -> str | None:
    spots = [i for i, ch in enumerate(gold) if ch.isdigit()]
    if not spots:
        return None
    i = rng.choice(spots)
    new = rng.choice([d for d in "0123456789" if d != gold[i]])
    return gold[:i] + new + gold[i + 1 :]


def _decimal(value: Fraction, places: int) -> str:
    scaled = round(abs(value) * 10**places)
    digits = str(scaled).rjust(places + 1, "0")
    return ("-" if value < 0 else "") + digits[:-places] + "." + digits[-places:]


def _other_value(gold: str, number: Number | None, rng: random.Random) -> str:
    if number is not None:
        return str(number.value + 1) if number.value.denominator == 1 else _decimal(number.value + 1, 3)
    return _digit_changed(gold, rng) or "1"


def _wrong(gold: str, number: Number | None, rng: random.Random) -> list[Case]:
    out = []
    for changed in dict.fromkeys(_digit_changed(gold, rng) for _ in range(DIGIT_CHANGES)):
        if changed is not None and parse_answer(changed) != parse_answer(gold):
            out.append(Case("digit_changed", _boxed(changed), gold, False))
    if number is not None:
        for places in NUDGE_PLACES:
            sign = rng.choice((1, -1))
            nudged = _decimal(number.value + sign * Fraction(1, 10**places), places + 1)
            out.append(Case("nudged", _boxed(nudged), gold, False))
            left, right = rng.choice(_BRACKETS)
            out.append(Case("nudged_bracket", _boxed(f"{left}{nudged}{right}"), gold, False))
            left, right = rng.choice(_BRACKETS[:3])
            out.append(Case("nudged_gold_bracket", _boxed(nudged), f"{left}{gold}{right}", False))
    h = _other_value(gold, number, rng)
    out += [
        Case("nested_box_hedge", f"$\\boxed{{{gold} \\text{{ or }} \\boxed{{{h}}}}}$", gold, False),
        Case("nested_box_hedge", f"$\\boxed{{{h} \\text{{ or }} \\boxed{{{gold}}}}}$", gold, False),
        Case("nested_box_hedge", f"$\\boxed{{{h}, \\boxed{{{gold}}}}}$", gold, False),
        Case("second_span_hedge", f"The answer is ${gold}$ or ${h}$.", gold, False),
        Case("second_span_hedge", f"The answer is ${h}$ or maybe ${gold}$.", gold, False),
        Case("second_sentence_hedge", f"The answer is ${gold}$. It could also be ${h}$.", gold, False),
        Case("second_sentence_hedge", f"The answer is ${gold}$. Unless it is ${h}$.", gold, False),
        Case("text_or_hedge", _boxed(f"{gold} \\text{{ or }} {h}"), gold, False),
        Case("text_or_hedge", _boxed(f"{gold} \\text{{ or maybe }} {h}"), gold, False),
        Case("second_value_list", _boxed(f"{gold}, {h}"), gold, False),
        Case("second_value_list", _boxed(f"{h}; {gold}"), gold, False),
    ]
    for word in rng.sample([w for w in NON_UNITS if w not in gold.lower()], TEXT_WORDS):
        command = rng.choice(("text", "mbox", "textbf"))
        out.append(Case("text_word", _boxed(f"{gold} \\{command}{{ {word}}}"), gold, False))
    last = re.search(r"(\d+)$", gold)
    if last and int(last.group(1)) not in (0, 1):  # 1² is 1
        out.append(Case("superscript", _boxed(gold + rng.choice(_SUPERSCRIPTS)), gold, False))
    for mark in ("?", " (?)", "!?"):
        out.append(Case("question", f"The answer is {gold}{mark}", gold, False))
        out.append(Case("question", _boxed(gold + mark), gold, False))
    out += _space_splits(gold, number)
    return out


def _space_splits(gold: str, number: Number | None) -> list[Case]:
    """The gold's digits split by a space (or a thin space), never where a thousands grouping could read it."""
    m = re.fullmatch(r"(-?)(\d+)", gold) or re.fullmatch(r"(-?)\\frac\{(\d+)\}\{\d+\}", gold)
    if not m or len(m.group(2)) < 2:
        return []
    digits, out = m.group(2), []
    for cut in range(1, len(digits)):
        left, right = digits[:cut], digits[cut:]
        if len(right) % 3 == 0 and 1 <= len(left) <= 3:
            continue  # `1 234` is a thousands grouping: a right answer
        split = gold.replace(digits, f"{left} {right}", 1) if gold.isdigit() or gold[1:].isdigit() else None
        if split is None:  # a fraction: `2 1/2` against 21/2
            split = f"{m.group(1)}{left} {right}/{gold.split('{')[2].rstrip('}')}"
        out.append(Case("space_split", _boxed(split), gold, False))
        out.append(Case("space_split", _boxed(split.replace(" ", "\\, ")), gold, False))
    return out[:6]


def _repeats(value: Fraction) -> bool:
    d = value.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d != 1


def _right(gold: str, number: Number | None) -> list[Case]:
    out = [Case("boxed", _boxed(gold), gold, True), Case("sentence", f"The answer is ${gold}$.", gold, True)]
    if number is None:
        return out
    value = number.value
    out += [Case("unit", _boxed(f"{gold} \\text{{ cm}}"), gold, True),
            Case("unit", _boxed(f"{gold} \\mbox{{ dollars}}"), gold, True),
            Case("unit", f"The answer is {gold} square units.", gold, True),
            ]
    if "," not in gold:  # `(2,125)` is a pair
        out.append(Case("bracketed", _boxed(f"({gold})"), gold, True))
    places = next((p for p in range(1, 12) if (value * 10**p).denominator == 1), None)
    if value.denominator != 1 and places is not None:
        out.append(Case("decimal", _boxed(_decimal(value, places)), gold, True))
    elif places is None and _repeats(value):
        out.append(Case("decimal", _boxed(_decimal(value, 7)), gold, True))
    hundred = value * 100
    if hundred.denominator == 1:
        out.append(Case("percent", _boxed(f"{hundred}\\%"), gold, True))
    if value < 0 and gold.startswith("-"):
        out += [Case("unicode_minus", _boxed("−" + gold[1:]), gold, True),
                Case("unicode_minus", _boxed("‐" + gold[1:]), gold, True)]
    plain = gold.lstrip("-")
    if plain.isdigit():
        out += [Case("unicode_digits", _boxed(gold.translate(str.maketrans(_FULLWIDTH))), gold, True),
                Case("unicode_digits", _boxed(gold.translate(str.maketrans(_ARABIC_INDIC))), gold, True)]
        if len(plain) >= 4 and plain[0] != "0":
            grouped = f"{int(plain):,}"
            for sep in ("\\,", "\u2009", "{,}", " "):
                out.append(Case("thin_space", _boxed(gold[: len(gold) - len(plain)] + grouped.replace(",", sep)), gold, True))
    return out


def cases_for(gold: str, rng: random.Random) -> list[Case]:
    """Wrong and right responses for `gold` (see the module docstring)."""
    gold = str(gold).strip()
    value = parse_answer(gold).value
    number = value if isinstance(value, Number) else None
    return _wrong(gold, number, rng) + _right(gold, number)


def generate(golds, seed: int = 0) -> list[Case]:
    """Cases for every distinct gold, each gold with its own seeded generator (order-independent)."""
    cases = []
    for gold in dict.fromkeys(str(g).strip() for g in golds):
        cases += cases_for(gold, random.Random(f"{seed}:{gold}"))
    return cases


def grade_cases(cases: list[Case], grade) -> dict:
    """Per class: cases, wrong answers paid, right answers refused; and the failing cases themselves."""
    counts: dict[str, Counter] = {}
    failures = []
    for case in cases:
        c = counts.setdefault(case.kind, Counter())
        c["cases"] += 1
        c["right_answers"] += case.correct
        paid = grade(case.response, case.gold)
        if paid and not case.correct:
            c["wrong_paid"] += 1
            failures.append(case)
        elif case.correct and not paid:
            c["right_refused"] += 1
            failures.append(case)
    table = {kind: {"cases": c["cases"], "must_pay": c["right_answers"] == c["cases"],
                    "wrong_paid": c["wrong_paid"], "right_refused": c["right_refused"]}
             for kind, c in sorted(counts.items())}
    return {"classes": table, "failures": failures}


def benchmark_golds(data_dir, files) -> list:
    """Every gold of each benchmark file, as loaded (the generator takes strings and numbers)."""
    from pathlib import Path

    from tandem.jsonl import read_jsonl

    return [row["answer"] for name in files for row in read_jsonl(Path(data_dir) / name)]
