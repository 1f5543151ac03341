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

Must pay, from `must_pay_cases(gold, rng)` (issue 60): the gold against itself, and each of
its `renderings` (brace-less and braced arguments, `\\dfrac` / `\\tfrac`, `\\left` / `\\right`,
thin spaces, sub/superscript braces, unit and percent and degree spellings, an `x = ` prefix,
a set's order, a trailing period, `\\displaystyle`; and the held-out forms of issue 60 where
the gold's form allows: `approximation` (`\\frac{\\pi}{4} \\approx 0.7854`), `mixed_number`
(`3\\ 5/6`), `complex_arrangement` (`2 + (-3)i`, `-i \\cdot 3`), `set_or_list` (`\\{-3, 2\\}` for
`-3, 2` and the reverse), `named_value` (`AB = 12`, `E[X] = ...`), `plus_infinity`) graded in both
directions, each with a digit-changed control that must not be paid; and one response form,
graded one way: `final_answer_display` (no box, a `**Final Answer**` line, display math).

`grade_cases(cases)` grades them and counts, per class, the wrong answers paid and the right
answers refused. `scripts/grader_generated.py` runs it on every gold of the shared
benchmarks and the toy task (`model_spec/GRADER.md`).
"""

from __future__ import annotations

import math
import random
import re
import time
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from tandem.grading.answer import Expr, Number, Seq, has_unparsed, holds_variable, parse_answer
from tandem.grading.extract import extract_answer
from tandem.grading.grader import MAX_ANSWER_CHARS

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
            den = gold.split('{')[2].rstrip('}')
            if den.isdigit() and int(left) + Fraction(int(right), int(den)) == Fraction(int(digits), int(den)):
                continue  # `1 7/10` is the mixed number 17/10: a right answer, not digits split
            split = f"{m.group(1)}{left} {right}/{den}"
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
    if number.unit:  # a gold with a unit: another unit is a wrong answer (issue 60)
        other = "kg" if number.unit != "kg" else "cm"
        out.append(Case("wrong_unit", _boxed(f"{gold} \\text{{ {other}}}"), gold, False))
    else:
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
    if hundred.denominator == 1 and not number.unit:
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


def _verdict_key(case: Case):
    """What `grade`'s verdict depends on, when that is the two parsed answers (a gold the grammar
    reads, both under the length cap): two cases with one key get one verdict. None otherwise."""
    answer = extract_answer(case.response)
    if answer is None or len(answer) > MAX_ANSWER_CHARS or len(case.gold) > MAX_ANSWER_CHARS:
        return None
    gold = parse_answer(case.gold)
    return None if has_unparsed(gold.value) else (parse_answer(answer), gold)


def grade_cases(cases: list[Case], grade, memo: dict | None = None) -> dict:
    """Per class: cases, wrong answers paid, right answers refused; the failing cases themselves; and
    the slowest `grade` call (`slowest_call_s`, `slowest_case`).

    With `memo` (a dict, shared between runs), each distinct pair of parsed answers is graded
    once: a rendering that only changes presentation costs a lookup."""
    counts: dict[str, Counter] = {}
    failures = []
    slowest = (0.0, None)  # the slowest `grade` call and its case
    for case in cases:
        c = counts.setdefault(case.kind, Counter())
        c["cases"] += 1
        c["right_answers"] += case.correct
        key = _verdict_key(case) if memo is not None else None
        if key is not None and key in memo:
            paid = memo[key]
        else:
            start = time.perf_counter()
            paid = grade(case.response, case.gold)
            slowest = max(slowest, (time.perf_counter() - start, case), key=lambda x: x[0])
            if key is not None:
                memo[key] = paid
        if paid and not case.correct:
            c["wrong_paid"] += 1
            failures.append(case)
        elif case.correct and not paid:
            c["right_refused"] += 1
            failures.append(case)
    table = {kind: {"cases": c["cases"], "must_pay": c["right_answers"] == c["cases"],
                    "wrong_paid": c["wrong_paid"], "right_refused": c["right_refused"]}
             for kind, c in sorted(counts.items())}
    return {"classes": table, "failures": failures, "slowest_call_s": slowest[0], "slowest_case": slowest[1]}


def benchmark_golds(data_dir, files) -> list:
    """Every gold of each benchmark file, as loaded (the generator takes strings and numbers)."""
    from pathlib import Path

    from tandem.io.jsonl import read_jsonl

    return [row["answer"] for name in files for row in read_jsonl(Path(data_dir) / name)]


# ----------------------------------------------------------------------------- must pay (issue 60)

# Equivalent renderings of a gold, by class: each rewrites the gold's writing, never its value.
_BRACE_LESS = ((re.compile(r"\\frac\{(\d)\}\{(\d)\}"), r"\\frac\1\2"), (re.compile(r"\\frac\{([^{}]+)\}\{(\d)\}"), r"\\frac{\1}\2"),
               (re.compile(r"\\frac\{(\d)\}\{([^{}]+)\}"), r"\\frac\1{\2}"), (re.compile(r"\\sqrt\{(\d)\}(?!\d)"), r"\\sqrt\1"))
_BRACED = ((re.compile(r"\\([dt]?frac)(\d)(\d)"), r"\\\1{\2}{\3}"), (re.compile(r"\\([dt]?frac)\{([^{}]+)\}(\d)"), r"\\\1{\2}{\3}"),
           (re.compile(r"\\([dt]?frac)(\d)\{"), r"\\\1{\2}{"), (re.compile(r"\\sqrt(\d)"), r"\\sqrt{\1}"))
_SCRIPTS = ((re.compile(r"([_^])(\w)(?![\w])"), r"\1{\2}"), (re.compile(r"([_^])\{(\w)\}"), r"\1\2"))
_UNIT_SPELLINGS = (("\\text{ cm}", "\\text{ centimeters}"), ("\\text{ km}", "\\text{ kilometers}"),
                   ("\\text{ m}", "\\text{ meters}"), ("\\text{ inches}", "\\text{ in}"), ("\\text{ feet}", "\\text{ ft}"),
                   ("\\text{ hours}", "\\text{ hr}"), ("\\text{ miles}", "\\text{ mi}"), ("\\text{ degrees}", "^\\circ"),
                   ("^\\circ", "^{\\circ}"), ("^{\\circ}", "\\text{ degrees}"), ("\\%", " \\text{ percent}"),
                   ("\\text{ dollars}", "\\text{ USD}"), ("\\text{ pounds}", "\\text{ lb}"))


def _sized(gold: str) -> str:
    """Every bracket not already sized written with `\\left` / `\\right`."""
    if "\\left" in gold or "\\right" in gold:
        return gold
    return re.sub(r"(?<!\\)([(\[])", r"\\left\1", re.sub(r"(?<!\\)([)\]])", r"\\right\1", gold))


def _sub_all(gold: str, rules) -> str:
    for pattern, repl in rules:
        gold = pattern.sub(repl, gold)
    return gold


def renderings(gold: str) -> list[tuple[str, str]]:
    """(class, rendering) pairs of `gold`, each equal to it by value, distinct from it in writing
    (a thin space after a comma that separates values, never inside a `{,}` thousands group)."""
    out = [("brace_less", _sub_all(gold, _BRACE_LESS)), ("braced", _sub_all(gold, _BRACED)),
           ("dfrac", gold.replace("\\frac", "\\dfrac")), ("tfrac", gold.replace("\\frac", "\\tfrac")),
           ("left_right", _sized(gold)),
           ("thin_space", re.sub(r"(?<!\{),(?!\})\s*", ",\\\\,", gold)), ("script_braces", _sub_all(gold, _SCRIPTS[:1])),
           ("script_brace_less", _sub_all(gold, _SCRIPTS[1:])), ("trailing_period", gold + "."),
           ("displaystyle", "\\displaystyle " + gold)]
    parsed = parse_answer(gold)
    value = parsed.value
    # `x = ` before a value; not before an expression in a variable (`x = 3R^2` is an equation gold,
    # which needs an equation: model_spec/GRADER.md)
    if "=" not in gold and not re.search(r"[a-z]", gold.replace("\\", " ").split("\\text")[0]) \
            and not holds_variable(value):
        out.append(("assignment", "x = " + gold))
    for a, b in _UNIT_SPELLINGS:
        if a in gold and "=" not in gold:  # `0.56 = 56\\%`: the word `percent` is read after a number only
            out.append(("unit_spelling", gold.replace(a, b)))
    items = _set_items(gold) if isinstance(value, Seq) and value.open in ("", "{") else None
    if items:
        out.append(("set_order", items))
    out += [(kind, text) for kind, text in _issue_60_forms(gold, parsed) if text]
    return [(kind, text) for kind, text in dict.fromkeys(out) if text != gold]


# A name before the value (`AB = 12`), chosen per gold: each is read as the name of the value.
_NAMES = ("AB", "E[X]", "f(3)", "a_{n}", "|z|", "m\\angle ABC", "\\text{Area}", "P(A)")
_COMPLEX = re.compile(r"(-?\d+)\s*([+-])\s*(\d*)\s*i")
_IMAGINARY = re.compile(r"(-?)(\d*)\s*i")


def _one_value(parsed) -> bool:
    """A gold that is one number or expression: no equation, no list, no approximation."""
    v = parsed.value
    return (isinstance(v, (Number, Expr)) and not (isinstance(v, Expr) and v.equations)
            and parsed.equation is None and not parsed.hedges)


def _approximated(gold: str, parsed) -> str | None:
    """`gold \\approx d`: d its value rounded to three significant places or more (not for integers
    or decimals, which are their own approximation)."""
    v = parsed.value
    if "\\approx" in gold or gold.endswith("."):
        return None  # already approximated; a period would end the sentence before the approximation
    if not _one_value(parsed) or (isinstance(v, Number) and (v.decimals is not None or v.value.denominator == 1
                                                            or v.percent)):
        return None
    x = float(v.value) if isinstance(v, Number) else v.numeric
    if x is None or x == 0 or abs(x) > 1e12:
        return None
    places = max(3, 3 - math.floor(math.log10(abs(x))))
    return f"{gold} \\approx {x:.{places}f}"


def _mixed(parsed) -> str | None:
    """An improper fraction as a mixed number with a TeX space before a slash fraction: `3\\ 5/6`."""
    v = parsed.value
    if not (_one_value(parsed) and isinstance(v, Number) and v.decimals is None and not v.percent and not v.unit
            and abs(v.value) > 1 and v.value.denominator > 1):
        return None
    whole, part = divmod(abs(v.value.numerator), v.value.denominator)
    space = "\\ " if whole % 2 else "\\,"
    return f"{'-' if v.value < 0 else ''}{whole}{space}{part}/{v.value.denominator}"


def _complex_arranged(gold: str) -> str | None:
    """`2-3i` as `2 + (-3)i`, `-3i` as `-i \\cdot 3`: the imaginary unit placed elsewhere."""
    if m := _COMPLEX.fullmatch(gold.strip()):
        a, sign, b = m.groups()
        return f"{a} + ({'-' if sign == '-' else ''}{b or 1})i"
    if (m := _IMAGINARY.fullmatch(gold.strip())) and m.group(2):
        return f"{m.group(1)}i \\cdot {m.group(2)}"
    return None


def _set_or_list(gold: str, parsed) -> str | None:
    """A bare list in set braces, or a set's values as a bare list (`-3, 2` and `\\{-3, 2\\}`)."""
    v = parsed.value
    if not isinstance(v, Seq) or v.named or re.search(r"\b(?:and|or)\b|\\text|\\pm|\\mp", gold):
        return None
    m = re.fullmatch(r"\\\{(.*)\\\}", gold.strip())
    if m and v.open == "{" and len(v.items) > 1:
        return m.group(1)
    return f"\\{{{gold}\\}}" if v.open == "" else None


def _issue_60_forms(gold: str, parsed) -> list[tuple[str, str | None]]:
    """The answer forms of issue 60's held-out cases, where the gold's form allows each."""
    out: list[tuple[str, str | None]] = [
        ("approximation", _approximated(gold, parsed)), ("mixed_number", _mixed(parsed)),
        ("complex_arrangement", _complex_arranged(gold)), ("set_or_list", _set_or_list(gold, parsed))]
    if _one_value(parsed) and "=" not in gold and not holds_variable(parsed.value):
        out.append(("named_value", f"{_NAMES[sum(map(ord, gold)) % len(_NAMES)]} = {gold}"))
    if "\\infty" in gold:
        out.append(("plus_infinity", re.sub(r"(?<![-+])(?<![-+] )\\infty", r"+\\infty", gold)))
    return out


def _set_items(gold: str) -> str | None:
    """A set `\\{a, b\\}` or a bare list written in the reverse order (no nested commas)."""
    m = re.fullmatch(r"\\\{(.*)\\\}", gold)
    body = m.group(1) if m else gold
    if "(" in body or "[" in body or "{" in body.replace("\\frac{", "").replace("\\sqrt{", ""):
        return None
    parts = [p.strip() for p in body.split(",")]
    if len(parts) < 2 or "and" in body or "or" in body:
        return None
    rev = ", ".join(reversed(parts))
    return f"\\{{{rev}\\}}" if m else rev


def _final_answer_display(answer: str) -> str:
    """A response with no box: a `**Final Answer**` line, then the answer as display math."""
    return f"We are done.\n\n**Final Answer**\n\\[\n{answer}\n\\]\n"


def must_pay_cases(gold: str, seed: int = 0) -> list[Case]:
    """The gold against itself (`self`); each rendering graded both ways (`<class>` and
    `<class>_as_gold`); and a control per rendering (`control_<class>`): the same rendering of
    the gold with a digit changed, against the gold. The changed gold is the first one `generate`
    writes for this gold (`digit_changed`), so that with a shared `memo` most controls reduce to
    an answer already graded there (a control of an expression costs a math-verify call). One
    response form more, graded one way: `final_answer_display` (no box, a `**Final Answer**` line
    and display math), with its control."""
    gold = str(gold).strip()
    out = [Case("self", _boxed(gold), gold, True)]
    changed = _digit_changed(gold, random.Random(f"{seed}:{gold}"))
    wrong = changed is not None and parse_answer(changed) != parse_answer(gold)
    controls = dict(renderings(changed)) if wrong else {}
    for kind, text in renderings(gold):
        out += [Case(kind, _boxed(text), gold, True), Case(kind + "_as_gold", _boxed(gold), text, True)]
        if kind in controls:
            out.append(Case("control_" + kind, _boxed(controls[kind]), gold, False))
    if "\\]" not in gold and "$" not in gold:
        out.append(Case("final_answer_display", _final_answer_display(gold), gold, True))
        if wrong:
            out.append(Case("control_final_answer_display", _final_answer_display(changed), gold, False))
    return out


def generate_must_pay(golds, seed: int = 0) -> list[Case]:
    """`must_pay_cases` for every distinct gold (seeded per gold, as `generate`)."""
    cases = []
    for gold in dict.fromkeys(str(g).strip() for g in golds):
        cases += must_pay_cases(gold, seed)
    return cases
