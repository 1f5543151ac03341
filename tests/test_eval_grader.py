"""The grader: extraction, normalisation, equivalence on every real gold answer, the time bound."""

from __future__ import annotations

import re
import threading
import time

import pytest

from tandem.io.jsonl import read_jsonl
from tandem_eval import grade, grader, is_equivalent
from tandem_eval.grader import extract_answer, normalize_answer


def _variants(gold: str) -> list[str]:
    """Responses a correct model could write for `gold`."""
    out = [f"So the final answer is \\boxed{{{gold}}}.", f"$\\boxed{{{gold}}}$"]
    if "$" not in gold:
        out.append(f"The final answer is ${gold}$.")
    if "\\frac" in gold:
        out.append(f"\\boxed{{{gold.replace(chr(92) + 'frac', chr(92) + 'dfrac')}}}")
    if "\\dfrac" in gold:
        out.append(f"\\boxed{{{gold.replace(chr(92) + 'dfrac', chr(92) + 'frac')}}}")
    if re.fullmatch(r"\d+", gold):
        value = int(gold)
        out += [f"\\boxed{{{value}}}", f"\\boxed{{{value:03d}}}"]
        if value >= 1000:
            out.append(f"\\boxed{{{value:,}}}")
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+", gold):
        out.append(f"\\boxed{{{gold.replace(',', '')}}}")
    return out


def test_every_real_gold_answer_grades_equal_to_itself_and_its_variants(shared_data):
    failures, checked = [], 0
    for path in sorted(shared_data.glob("*.jsonl")):
        for row in read_jsonl(path):
            gold = row["answer"]
            for response in _variants(gold):
                checked += 1
                if not grade(response, gold):
                    failures.append((path.name, gold, response))
    assert checked > 20000
    assert failures == []


def test_extract_answer_takes_the_last_complete_boxed_with_nested_braces():
    text = "First \\boxed{1}. Then \\boxed{\\frac{\\sqrt{3}}{2}} and a cut-off \\boxed{\\frac{1}{"
    assert extract_answer(text) == "\\frac{\\sqrt{3}}{2}"


def test_a_stray_number_is_not_an_answer():
    # No box, no answer phrase: nothing was committed to, so nothing is graded correct.
    assert extract_answer("We had 3 apples, then 2,125 more") is None


def test_extract_answer_reads_fbox_and_escaped_braces():
    assert extract_answer("thus \\fbox{\\{1, 2\\}}") == "\\{1, 2\\}"


@pytest.mark.parametrize("text, expected", [
    ("Adding up, the answer is $\\frac{3}{4}$.", "$\\frac{3}{4}$."),
    ("Adding up, the answer is $\\frac{3}{4}$. Done.", "$\\frac{3}{4}$. Done."),  # read to the end, so refused
    ("Final answer: 42.", "42."),
    ("work...\n#### 1,600", "1,600"),
    ("no digits at all", None),
])
def test_extract_answer_falls_back_to_answer_phrases(text, expected):
    assert extract_answer(text) == expected


EQUIVALENT = [
    ("25", "025"), ("2,125", "2125"), ("10,\\!080", "10080"), ("\\dfrac{1}{2}", "\\frac12"),
    ("0.5", "\\frac{1}{2}"), ("90^\\circ", "90"), ("5.4 \\text{ cents}", "5.4"), ("\\text{(C)}", "C"),
    ("x = 5", "5"), ("\\$32,\\!348", "32348"), ("1\\frac{4}{5}", "\\frac{9}{5}"), ("4.5e33", "4.5 \\times 10^{33}"),
    ("50\\%", "50"), ("\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\frac{\\pi}{2})"), ("\\sqrt{4}", "2"),
    ("3, 5, 7", "7,5,3"), ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}"), ("2\\pi", "\\pi \\cdot 2"),
    ("6 - 5i", "-5i+6"), ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}"),
    ("-\\frac{3}{2}", "-1.5"), ("+2", "2"),
]
DIFFERENT = [
    ("338552", "338551"), ("24", "25"), ("(1,2)", "(1,2]"), ("\\frac{1}{3}", "0.33"), ("1.3e-10", "2.6e-10"),
    ("x^2", "x^3"), ("\\sqrt{2}", "\\sqrt{3}"), ("A", "B"), ("", "5"), ("3", "-3"),
]


@pytest.mark.parametrize("pred, gold", EQUIVALENT)
def test_known_equivalent_pairs_grade_equal(pred, gold):
    assert is_equivalent(pred, gold)


@pytest.mark.parametrize("pred, gold", DIFFERENT)
def test_known_different_pairs_grade_unequal(pred, gold):
    assert not is_equivalent(pred, gold)


def test_symbolic_pairs_are_decided_by_math_verify():
    before = grader.stats()["math_verify"]
    assert is_equivalent("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}")
    assert grader.stats()["math_verify"] == before + 1


def test_plain_numbers_never_reach_math_verify():
    before = grader.stats()
    assert is_equivalent("1,450,000", "1450000") and not is_equivalent("7", "8")
    after = grader.stats()
    assert after["math_verify"] == before["math_verify"]
    assert after["fast_path"] == before["fast_path"] + 2


def test_normalize_answer_strips_presentation_only():
    assert normalize_answer("$\\left( 1, \\dfrac{1}{2} \\right).$") == "( 1, \\frac{1}{2} )"


def test_response_without_an_answer_grades_incorrect():
    assert not grade("", "5")
    assert not grade("I do not know.", "5")


PATHOLOGICAL = ("\\boxed{10!!!!!!}", "1")  # math-verify spends seconds on this comparison


def test_pathological_input_is_bounded_and_counted_in_the_main_thread():
    before = grader.stats()["timeouts"]
    start = time.monotonic()
    assert not grade(*PATHOLOGICAL, timeout_s=0.3)
    assert time.monotonic() - start < 10 * (0.3 + 0.5)  # the bound with a 10x margin: load cannot fail it
    assert grader.stats()["timeouts"] == before + 1


def test_a_timeout_swallowed_inside_the_grader_fires_again(monkeypatch):
    import signal

    from tandem.grading import timebound

    def swallows_the_first_alarm(pred, gold):
        try:
            while True:
                pass
        except BaseException:  # what a bare `except:` deep in sympy or mpmath does
            pass
        while True:
            pass

    monkeypatch.setattr(timebound, "math_verify_equal", swallows_the_first_alarm)
    start = time.monotonic()
    assert timebound.bounded_math_verify("1", "1", timeout_s=0.2) is None
    assert time.monotonic() - start < 10 * (0.2 + 0.5)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no alarm left behind


def test_pathological_input_is_bounded_off_the_main_thread():
    results = {}

    def worker():
        grader.is_equivalent("\\sqrt{4}", "2", timeout_s=30)  # starts the grading subprocess
        before = grader.stats()["timeouts"]
        start = time.monotonic()
        results["verdict"] = grade(*PATHOLOGICAL, timeout_s=0.5)
        results["seconds"] = time.monotonic() - start
        results["counted"] = grader.stats()["timeouts"] - before
        # The spare worker, started with the first, takes over: no wait for a new one's import.
        results["after"] = grader.is_equivalent("\\sqrt{9}", "3", timeout_s=2.0)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(60)
    assert results == {"verdict": False, "seconds": pytest.approx(results["seconds"]), "counted": 1, "after": True}
    assert results["seconds"] < 10 * (0.5 + 0.5)


def test_huge_exponents_are_bounded_like_any_symbolic_input():
    start = time.monotonic()
    assert not is_equivalent("1e999999999", "1", timeout_s=0.5)
    assert not is_equivalent("10^{99999999}", "5", timeout_s=0.5)
    assert time.monotonic() - start < 10 * 2 * (0.5 + 0.5)


def test_reward_is_one_for_a_correct_response_and_zero_otherwise():
    assert grader.reward("so \\boxed{025}", "25") == 1.0
    assert grader.reward("so \\boxed{26}", "25") == 0.0
