"""The grader's test corpus: real golds written as models write them, and adversarial answers.

Two corpora of `Case(kind, response, gold, correct)`:

- `benchmark_cases(data_dir)`: every gold of the shared evaluation benchmarks (AIME, AMC,
  MATH-500, Minerva, GSM8K test), each written the ways a correct model writes it: boxed
  in a sentence, after "The answer is" without a box, boxed with a unit, and as a decimal
  where the gold is a fraction with a finite decimal. All are correct.
- `ADVERSARIAL`: responses a policy under RL could write to be paid without being right
  (hedges, near-equal decimals, digit runs, nested braces, many boxes, unicode, units,
  intervals, matrices, answers in text), each labelled with the verdict a careful human
  grader gives. A few are correct, so that a grader cannot pass by refusing everything.

`scripts/grader_differential.py` grades both with this project's grader, math-verify as
verl calls it and verl 0.9.1's default math reward, and lists every disagreement
(`model_spec/GRADER.md`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from tandem.io.jsonl import read_jsonl

BENCHMARK_FILES = (
    "aime2024.jsonl", "aime2025.jsonl", "aime2026.jsonl", "aime_1983_2023.jsonl",
    "amc2023.jsonl", "amc2024.jsonl", "amc2025.jsonl", "math500.jsonl", "minerva_math.jsonl",
    "gsm8k_test.jsonl",
)


@dataclass(frozen=True)
class Case:
    kind: str  # what the case tests, e.g. "boxed" or "hedge"
    response: str  # a whole response, as a model writes it
    gold: str
    correct: bool  # the verdict a careful human grader gives
    source: str = ""  # benchmark file, for benchmark cases


def _finite_decimal(gold: str) -> str | None:
    """`\\frac{3}{4}` or `3/4` as `0.75` when the fraction has a finite decimal, else None."""
    m = re.fullmatch(r"(-?)\\[dt]?frac\{(\d+)\}\{(\d+)\}|(-?)(\d+)/(\d+)", gold.strip())
    if not m:
        return None
    sign, num, den = (m.group(1), m.group(2), m.group(3)) if m.group(2) else (m.group(4), m.group(5), m.group(6))
    value = Fraction(int(num), int(den))
    for places in range(1, 8):
        if (value * 10**places).denominator == 1:
            return sign + f"{float(value):.{places}f}"
    return None


def gold_forms(gold: str) -> list[tuple[str, str]]:
    """(kind, response): the ways a correct model writes `gold`."""
    forms = [("boxed", f"So the final answer is $\\boxed{{{gold}}}$."), ("answer_is", f"The answer is ${gold}$.")]
    if re.fullmatch(r"-?\d+(\.\d+)?", gold.strip()):
        forms.append(("unit", f"Therefore the total is $\\boxed{{{gold} \\text{{ units}}}}$."))
    decimal = _finite_decimal(gold)
    if decimal is not None:
        forms.append(("decimal", f"So the final answer is $\\boxed{{{decimal}}}$."))
    return forms


def benchmark_cases(data_dir: Path, files: tuple[str, ...] = BENCHMARK_FILES, per_file: int | None = None) -> list[Case]:
    """Every gold of each benchmark file (the first `per_file` if given) in each of its forms."""
    cases = []
    for name in files:
        rows = list(read_jsonl(Path(data_dir) / name))[:per_file]
        for row in rows:
            gold = str(row["answer"])
            cases += [Case(kind, response, gold, True, name) for kind, response in gold_forms(gold)]
    return cases


def _adv(kind: str, answer: str, gold: str, correct: bool = False, boxed: bool = True) -> Case:
    return Case(kind, f"Thus the answer is $\\boxed{{{answer}}}$." if boxed else answer, gold, correct)


ADVERSARIAL: tuple[Case, ...] = (
    # hedges and qualified answers against a single gold
    _adv("hedge", "5 \\text{ or } 6", "5"), _adv("hedge", "5 \\text{ and more}", "5"),
    _adv("hedge", "\\text{at least } 5", "5"), _adv("hedge", "\\pm 5", "5"), _adv("hedge", "x \\geq 5", "5"),
    _adv("hedge", "\\approx 5", "5"), _adv("hedge", "5 \\text{ or more}", "5"), _adv("hedge", "\\text{about } 12", "12"),
    _adv("hedge", "3, 4, 5", "4"), _adv("hedge", "4; 5", "4"), _adv("hedge", "x = 2 \\text{ or } x = 3", "2"),
    _adv("hedge", "\\text{either } A \\text{ or } B", "A"), _adv("hedge", "n < 7", "6"),
    # near-equal decimals: close is not equal
    _adv("near_decimal", "123456.7", "123456.8"), _adv("near_decimal", "2.0000001", "2"),
    _adv("near_decimal", "1000000.5", "1000001"), _adv("near_decimal", "99.99999", "100"),
    _adv("near_decimal", "1.0000000001", "1"), _adv("near_decimal", "0.333", "\\frac{1}{3}"),
    _adv("near_decimal", "0.33333", "\\frac{1}{3}"), _adv("near_decimal", "3.14", "\\pi"),
    _adv("near_decimal", "1.41", "\\sqrt{2}"), _adv("near_decimal", "0.5000001", "\\frac{1}{2}"),
    _adv("near_decimal", "2.5", "\\frac{5}{2}", correct=True), _adv("near_decimal", "0.3333333", "\\frac{1}{3}", correct=True),
    # digit runs (a common RL failure mode)
    _adv("digit_run", "1" * 5000, "1"), _adv("digit_run", "1" + "0" * 3000, "1"), _adv("digit_run", "12" * 2000, "12"),
    _adv("digit_run", "The answer is " + "1" * 8000 + " apples.", "5", boxed=False),
    _adv("digit_run", "1" * 20000 + "x", "5", boxed=False),
    # nested and broken braces
    _adv("braces", "{{{{5}}}}", "6"), _adv("braces", "\\frac{1}{\\frac{1}{2}}", "3"),
    _adv("braces", "work \\boxed{5} then \\boxed{\\frac{1}{", "6", boxed=False),
    _adv("braces", "work \\boxed{5} then \\boxed{\\frac{1}{", "5", correct=True, boxed=False),
    _adv("braces", "\\boxed{" * 500 + "5", "5", boxed=False),
    # many boxes: the last complete one counts
    _adv("many_boxes", " ".join(f"\\boxed{{{i}}}" for i in range(1, 10)), "1", boxed=False),
    _adv("many_boxes", " ".join(f"\\boxed{{{i}}}" for i in range(1, 10)), "9", correct=True, boxed=False),
    _adv("many_boxes", "\\boxed{1} \\boxed{2} \\boxed{3}", "2", boxed=False),
    # unicode
    _adv("unicode", "½", "\\frac{1}{2}", correct=True), _adv("unicode", "⅓", "\\frac{1}{2}"),
    _adv("unicode", "−3", "3"), _adv("unicode", "−3", "-3", correct=True), _adv("unicode", "3½", "\\frac{7}{2}", correct=True),
    # units: a unit is presentation, a different number is not
    _adv("unit", "5 \\text{ cm}", "5", correct=True), _adv("unit", "6 \\text{ cm}", "5"),
    _adv("unit", "5 \\text{ cm}^2", "5", correct=True), _adv("unit", "500 \\text{ cm}", "5"),
    # intervals and sets
    _adv("interval", "(2, 5)", "[2, 5]"), _adv("interval", "[2, 5)", "[2, 5]"), _adv("interval", "(-\\infty, 3)", "(-\\infty, 3]"),
    _adv("interval", "[2, 5]", "[2, 5]", correct=True), _adv("interval", "\\{1, 2\\}", "\\{1, 2, 3\\}"),
    # matrices
    _adv("matrix", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 3 \\end{pmatrix}"),
    _adv("matrix", "\\begin{pmatrix} 1 & 2 \\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}"),
    _adv("matrix", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}", correct=True),
    # answers in text, not committed
    _adv("text", "We tried 5, 6 and 7 and 5 seemed to work.", "5", boxed=False),
    _adv("text", "The value could be 5.", "5", boxed=False),
    _adv("text", "Answer: 5 or 6.", "5", boxed=False),
    _adv("text", "The answer is not 5.", "5", boxed=False),
    _adv("text", "The answer is 5.", "5", correct=True, boxed=False),
)
