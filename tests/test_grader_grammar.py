"""The grammar: an answer is read whole, and any token it cannot account for refuses the answer.

Each class a policy once used to be paid (issue: "the reward pays only what it understands")
is a row here, written as a model would write it; `tests/test_grader_generated.py` runs the
same classes from every real gold.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tandem.errors import TandemError
from tandem.grading import grader
from tandem.grading.grader import grade, is_equivalent
from tandem_eval.core.datasets import load_file

WRONG = {
    # a hedge hidden by structure
    "box in a box": ("$\\boxed{7 \\text{ or } \\boxed{8}}$", "8"),
    "list in a box around a box": ("$\\boxed{7, \\boxed{8}}$", "8"),
    "second span": ("The answer is $7$ or $8$.", "7"),
    "second sentence": ("The answer is $7$. It might also be $8$.", "7"),
    "second sentence, no math": ("Answer: 7. Not sure though.", "7"),
    "sign-off then a hedge": ("The final answer is $7$. I hope it is correct. Or 8.", "7"),
    # a word after a number in \text{} / \mbox{} that is not a unit
    "multiplier": ("\\boxed{7 \\text{ thousand}}", "7"),
    "operation": ("\\boxed{7 \\mbox{ squared}}", "7"),
    "doubt": ("\\boxed{7\\text{ (maybe)}}", "7"),
    "negation": ("\\boxed{7 \\textbf{ not}}", "7"),
    # a near-miss decimal in brackets, on either side
    "parenthesised": ("\\boxed{(0.50000001)}", "\\frac{1}{2}"),
    "left-right": ("\\boxed{\\left( 3.0000002 \\right)}", "3"),
    "braces": ("\\boxed{{3.0000002}}", "3"),
    "gold in braces": ("\\boxed{3.0000002}", "{3}"),
    "gold in left-right": ("\\boxed{3.0000002}", "\\left(3\\right)"),
    "repeating nudged": ("\\boxed{0.33333343}", "\\frac{1}{3}"),
    # unicode superscripts, question marks, digits joined across a space
    "superscript": ("\\boxed{3²}", "3"),
    "superscript on a fraction's gold": ("\\boxed{12³}", "12"),
    "question mark": ("\\boxed{7?}", "7"),
    "question in brackets": ("The answer is 7 (?)", "7"),
    "interrobang": ("\\boxed{7!?}", "7"),
    "two numbers": ("\\boxed{1 2}", "12"),
    "thin space inside a number": ("\\boxed{12\\,34}", "1234"),
    "mixed number read as digits": ("\\boxed{2 1/2}", "\\frac{21}{2}"),
    # found by a held-out red team (model_spec/GRADER.md, "Held out")
    "a cut, not rounded, repeating decimal": ("\\boxed{0.166666}", "\\frac{1}{6}"),
    "a string NaN gold": ("\\boxed{nan}", "nan"),
    "K for thousand": ("\\boxed{5\\text{ K}}", "5"),
    "a phantom hedge": ("\\boxed{5 \\phantom{\\text{ or } 6}}", "5"),
    "an equation that is false": ("\\boxed{5 = 6}", "6"),
    "a chain of equations": ("\\boxed{x = 5 = 6}", "6"),
    "trailing off": ("The answer is 5...", "5"),
    "zero for a tiny fraction": ("\\boxed{0.000000}", "\\frac{1}{3000000}"),
    "trailing off, spaced": ("The answer is 5. . .", "5"),
}
RIGHT = {
    "percent for its decimal": ("\\boxed{25\\%}", "0.25"),
    "decimal for a percent gold": ("\\boxed{0.25}", "25\\%"),
    "fullwidth digits": ("\\boxed{１２}", "12"),
    "arabic-indic digits": ("\\boxed{١٢}", "12"),
    "unicode minus": ("\\boxed{−7}", "-7"),
    "hyphen minus": ("\\boxed{\u20107}", "-7"),
    "overline repeating": ("\\boxed{0.\\overline{3}}", "\\frac{1}{3}"),
    "overline with a fixed part": ("\\boxed{0.1\\overline{6}}", "\\frac{1}{6}"),
    "inequality for its interval": ("\\boxed{x \\ge 5}", "[5, \\infty)"),
    "two-sided inequality": ("\\boxed{-2 < x \\le 3}", "(-2, 3]"),
    "thin-space thousands": ("\\boxed{1\\,234\\,567}", "1234567"),
    "unit": ("\\boxed{12 \\text{ cm}^2}", "12"),
    "unit per unit": ("\\boxed{60 \\text{ km/h}}", "60"),
    "list with and": ("\\boxed{2, 3, \\text{and } 4}", "2, 3, 4"),
    "degrees": ("\\boxed{30^{\\circ}}", "30"),
    "answer phrase at the end": ("So we add them. The answer is $\\frac{3}{4}$.", "0.75"),
    "control spaces": ("\\boxed{\\ 5\\ }", "5"),
    "an equation for an equation": ("\\boxed{y = 2x + 3}", "y=2x+3"),
    "a period inside the math and after it": ("The answer is $245 \\text{ yd}.$.", "245"),
    "minerva's sign-off": ("Final Answer: The final answer is $12$. I hope it is correct.", "12"),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_answer_in_each_class_is_not_paid(name):
    response, gold = WRONG[name]
    assert grade(response, gold) is False


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_a_right_answer_in_each_valid_form_is_paid(name):
    response, gold = RIGHT[name]
    assert grade(response, gold) is True


def test_a_token_outside_the_grammar_is_counted_as_unparsed_and_never_reaches_math_verify():
    before = grader.stats()
    assert not is_equivalent("7 \\text{ thousand}", "7")
    assert not is_equivalent("7 @ 2", "7")
    after = grader.stats()
    assert after["unparsed"] == before["unparsed"] + 2
    assert after["math_verify"] == before["math_verify"]


def test_a_hedge_is_counted_as_hedged():
    before = grader.stats()["hedged"]
    assert not grade("The answer is $7$ or $8$.", "7")
    assert grader.stats()["hedged"] == before + 1


def test_math_verify_is_asked_only_about_whole_expressions():
    # math-verify's own parse reads `2` out of the first and pays it for the second.
    a = "\\hbar \\omega(v+1 / 2)-\\frac{E_{0}^{3} e^{2}}{2 m \\omega^{2}}"
    b = "\\hbar \\omega(v+1 / 2)-\\frac{E_{0}^{2} e^{2}}{2 m \\omega^{2}}"
    assert not is_equivalent(a, b)
    assert is_equivalent(b, b)  # the gold's own writing still pays


def test_an_expression_within_a_rounding_of_the_gold_is_not_the_gold():
    assert not is_equivalent("\\pi + 10^{-30}", "\\pi")
    assert not is_equivalent("1.4142135623730951", "\\sqrt{2}")
    assert is_equivalent("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}")


def test_a_number_in_another_base_is_compared_as_written():
    assert is_equivalent("204_5", "204_{5}") or is_equivalent("204_5", "204_5")
    assert not is_equivalent("204_1", "204_5")


NOT_GOLDS = {"null": None, "NaN": float("nan"), "inf": float("inf"), "empty list": [], "empty dict": {},
             "list": [5], "tuple": (), "true": True, "false": False, "empty": "", "blank": "   ", "object": object()}


@pytest.mark.parametrize("gold", NOT_GOLDS.values(), ids=NOT_GOLDS.keys())
def test_a_value_that_cannot_be_a_gold_is_never_matched_and_never_raises(gold):
    before = grader.stats()["bad_gold"]
    for response in ("\\boxed{nan}", "\\boxed{None}", "\\boxed{[]}", "\\boxed{}", "\\boxed{True}", f"\\boxed{{{gold}}}"):
        assert grade(response, gold) is False
    assert grader.stats()["bad_gold"] == before + 6


def test_a_number_gold_of_json_type_is_graded():
    assert grade("\\boxed{5}", 5) and grade("\\boxed{2.5}", 2.5) and not grade("\\boxed{6}", 5)
    assert grade("\\boxed{None}", "None")  # a string gold is a real answer (MATH has "None")


@pytest.mark.parametrize("value, shown", [("NaN", "nan"), ("[]", r"\[\]"), ("{}", r"\{\}"), ("[5]", r"\[5\]"),
                                          ("true", "True")])
def test_an_eval_row_whose_gold_cannot_be_graded_is_refused_at_its_line(tmp_path, value, shown):
    path = tmp_path / "bench.jsonl"
    path.write_text('{"id": "a", "problem": "p", "answer": "2"}\n' + f'{{"id": "b", "problem": "q", "answer": {value}}}\n')
    with pytest.raises(TandemError, match=rf"bench.jsonl:2: the gold answer is {shown}; fix or drop the row"):
        load_file(path)


def test_a_cold_process_that_warmed_up_grades_its_first_symbolic_call_within_the_bound():
    code = (
        "import time\n"
        "from tandem.grading import grader\n"
        "grader.warm_up()\n"
        "start = time.thread_time()\n"
        "ok = grader.is_equivalent('\\\\frac{\\\\sqrt{2}}{2}', '\\\\frac{1}{\\\\sqrt{2}}', timeout_s=2.0)\n"
        "print(ok, time.thread_time() - start)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    ok, cpu = out.stdout.split()
    assert ok == "True"
    assert float(cpu) < 2.0 + 0.5  # CPU time of the grading thread: load cannot fail it


@pytest.mark.parametrize("text", ["", "\\boxed{", "}" * 50, "$" * 999, "\\text{" * 400, "\\begin{pmatrix}" * 100,
                                  "\\boxed{\\left(\\right)}", "\\boxed{x \\in}", "\\boxed{<}", "\\boxed{1 < x < }",
                                  "\\boxed{\\overline{}}", "\\boxed{0.\\overline{}}", "\\boxed{\\frac{}{}}",
                                  "\\boxed{\\phantom}", "\\boxed{\\}", "\\boxed{1,,2}", "\\boxed{\\cup}",
                                  "\\boxed{^\\circ}", "\\boxed{\\%}", "\\boxed{x =}", "The answer is"])
def test_odd_text_gets_a_verdict_never_an_exception(text):
    before = grader.stats()["errors"]
    for gold in ("5", "[1, 2]", "\\begin{pmatrix}1\\\\2\\end{pmatrix}", "x \\ge 1", "\\text{even}"):
        assert grade(text, gold) in (True, False)
    assert grader.stats()["errors"] == before
    assert math.isfinite(1.0)
    json.dumps(grader.stats())
