"""Right answers in the golds' own notation are paid, and a wrong unit is not (issue 60).

TeX reads a command's argument as one token or one group, so a brace-less gold
(`\\frac{29}4`, `\\sqrt2`, `204_5`) and a braced response are the same answer, in either
direction. A unit on both sides must be the same unit, whatever its spelling; a unit on one
side only is presentation, as before.
"""

from __future__ import annotations

import pytest

from tandem.grading.grader import is_equivalent
from tandem.grading.tokens import braced_arguments, tokenize

# (response, gold): equal in both directions
BRACE_FORMS = {
    "fraction, brace-less denominator": ("\\frac{29}{4}", "\\frac{29}4"),
    "fraction, brace-less numerator": ("\\frac{9}{19}", "\\frac9{19}"),
    "negative fraction": ("-\\frac{35}{9}", "-\\frac{35}9"),
    "two single digits": ("\\frac{3}{2}", "\\frac32"),
    "dfrac against brace-less": ("\\dfrac{29}{4}", "\\frac{29}4"),
    "spaces between arguments": ("\\frac 1 2", "\\frac{1}{2}"),
    "root": ("\\sqrt{2}", "\\sqrt2"),
    "coefficient and root": ("11\\sqrt{2}", "11\\sqrt2"),
    "cdot before a root": ("11 \\cdot \\sqrt2", "11\\sqrt2"),
    "cube root, brace-less radicand": ("\\sqrt[3]{2}", "\\sqrt[3]2"),
    "roots in a tuple": ("(-\\sqrt{3}, \\sqrt{3})", "(-\\sqrt3, \\sqrt3)"),
    "root over a number": ("\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt3}2"),
    "base subscript": ("204_{5}", "204_5"),
    "power": ("x^{2}", "x^2"),
}
# (response, gold): refused in both directions
BRACE_WRONG = {
    "another denominator": ("\\frac{29}{5}", "\\frac{29}4"),
    "another radicand": ("\\sqrt{3}", "\\sqrt2"),
    "another base": ("204_{6}", "204_5"),
    "TeX's root of one digit": ("\\sqrt{23}", "\\sqrt23"),  # `\sqrt23` typesets as the root of 2, then 3
}
UNITS_EQUAL = {
    "km spelled out": ("24 \\text{ kilometers}", "24 \\text{ km}"),
    "hours": ("35 \\text{ hr}", "35 \\text{ hours}"),
    "dollar sign and word": ("\\$3", "3 \\text{ dollars}"),
    "percent word": ("125 \\text{ percent}", "125\\%"),
    "degrees": ("30^\\circ", "30 \\text{ degrees}"),
    "degree sign": ("30°", "30^{\\circ}"),
    "per and slash": ("60 \\text{ km/h}", "60 \\text{ kilometers per hour}"),
    "square as a power": ("12 \\text{ cm}^2", "12 \\text{ square centimeters}"),
    "generic square units": ("12 \\text{ square units}", "12 \\text{ units}^2"),
    "expression with a unit": ("5\\sqrt{2} \\text{ cm}", "5\\sqrt2\\text{ centimeters}"),
    "USD": ("1.85 \\text{ dollars}", "1.85\\ \\text{USD}"),
    "bare number, gold with a unit": ("24", "24 \\text{ m}"),
    "mph spelled out": ("55 \\text{ miles per hour}", "55 \\text{ mph}"),
    "a fraction for a percent": ("0.18", "18\\%"),
}
UNITS_WRONG = {
    "km for m": ("24 \\text{ km}", "24 \\text{ m}"),
    "hours for minutes": ("35 \\text{ hours}", "35 \\text{ minutes}"),
    "dollars for cents": ("3 \\text{ dollars}", "3 \\text{ cents}"),
    "dollar sign for cents": ("\\$3", "3 \\text{ cents}"),
    "percent for degrees": ("30\\%", "30^\\circ"),
    "speed units": ("60 \\text{ km/h}", "60 \\text{ m/s}"),
    "area for length": ("12 \\text{ cm}^2", "12 \\text{ cm}"),
    "mph for km/h": ("55 \\text{ mph}", "55 \\text{ km/h}"),
    "a percent of the fraction for the percent": ("0.18\\%", "18\\%"),  # a percent on both sides is as written
    "expression, other unit": ("5\\sqrt{2} \\text{ cm}", "5\\sqrt2\\text{ m}"),
}


@pytest.mark.parametrize("response, gold", BRACE_FORMS.values(), ids=BRACE_FORMS)
def test_a_brace_less_argument_reads_as_tex_reads_it_in_either_direction(response, gold):
    assert is_equivalent(response, gold) and is_equivalent(gold, response)


@pytest.mark.parametrize("response, gold", BRACE_WRONG.values(), ids=BRACE_WRONG)
def test_another_value_written_brace_less_is_refused_in_either_direction(response, gold):
    assert not is_equivalent(response, gold) and not is_equivalent(gold, response)


@pytest.mark.parametrize("response, gold", UNITS_EQUAL.values(), ids=UNITS_EQUAL)
def test_the_same_unit_in_any_spelling_is_paid(response, gold):
    assert is_equivalent(response, gold) and is_equivalent(gold, response)


@pytest.mark.parametrize("response, gold", UNITS_WRONG.values(), ids=UNITS_WRONG)
def test_a_different_unit_is_refused_with_no_conversion(response, gold):
    assert not is_equivalent(response, gold) and not is_equivalent(gold, response)


def test_the_percent_word_pays_only_against_a_gold_that_writes_a_percent():
    assert is_equivalent("125 \\text{ percent}", "125\\%")
    assert not is_equivalent("125 \\text{ percent}", "125")  # a word after a bare gold stays a refusal
    assert is_equivalent("125\\%", "125")  # the sign, as before: 125 or 1.25


def test_the_argument_rule_splits_a_number_after_its_first_digit():
    texts = [t.text for t in tokenize("\\frac123")]
    assert texts == ["frac", "{", "1", "}", "{", "2", "}", "3"]


def test_the_argument_rule_leaves_a_missing_argument_missing_and_never_raises():
    for s in ("\\frac", "\\frac{1}", "x^", "\\sqrt[3", "{{{{\\frac}}}}", "\\frac}" + "{" * 500, "^" * 1000):
        toks = tokenize(s)
        assert isinstance(toks, list) or toks is not None
        assert is_equivalent(s, "1") in (True, False)
    assert braced_arguments([]) == []


FORMS_PAID = {
    "bold final answer line": ("We add.\n**Final Answer**: 23", "23"),
    "final answer heading, display math": ("## Final Answer\n\n$$\n\\frac{1}{2}\n$$", "0.5"),
    "a Greek letter names the value": ("\\boxed{\\theta = 65^\\circ}", "65"),
    "a Greek letter, gold in degrees": ("\\boxed{\\theta = 65^\\circ}", "65^\\circ"),
    "exact value, then its decimal": ("\\boxed{\\frac{1}{3} \\approx 0.333}", "\\frac{1}{3}"),
    "exact value, then its rounded decimal": ("\\boxed{\\frac{2}{3} \\approx 0.67}", "\\frac{2}{3}"),
}
FORMS_REFUSED = {
    "a hedge after the heading": ("## Final Answer\n$$ 23 $$ or maybe 24", "23"),
    "the last box still wins": ("**Final Answer**: 23 and so \\boxed{24}", "23"),
    "another angle": ("\\boxed{\\theta = 66^\\circ}", "65"),
    "a wrong approximation": ("\\boxed{\\frac{1}{3} \\approx 0.5}", "\\frac{1}{3}"),
    "an approximation alone": ("\\boxed{\\approx 0.333}", "\\frac{1}{3}"),
    "an approximation after an expression": ("\\boxed{\\sqrt{2} \\approx 1.5}", "\\sqrt{2}"),
    "the wrong exact value": ("\\boxed{\\frac{1}{4} \\approx 0.25}", "\\frac{1}{3}"),
}


@pytest.mark.parametrize("response, gold", FORMS_PAID.values(), ids=FORMS_PAID)
def test_answer_forms_models_write_are_paid(response, gold):
    from tandem.grading.grader import grade

    assert grade(response, gold)


@pytest.mark.parametrize("response, gold", FORMS_REFUSED.values(), ids=FORMS_REFUSED)
def test_their_hedged_or_wrong_variants_are_refused(response, gold):
    from tandem.grading.grader import grade

    assert not grade(response, gold)


SOLUTIONS_PAID = {
    "roots joined by or": ("x = 7 \\text{ or } x = -7", "7, -7"),
    "the reverse": ("7, -7", "x = 7 \\text{ or } x = -7"),
    "roots joined by and": ("4 \\text{ and } -9", "-9, 4"),
    "plus or minus": ("\\pm 7", "7,-7"),
    "a list for a plus-or-minus gold": ("-7, 7", "\\pm 7"),
    "a term plus or minus a root": ("1 \\pm \\sqrt{5}", "1+\\sqrt5, 1-\\sqrt5"),
    "a gold written with or": ("-12, -30", "-12 \\text{ or } -30"),
}
SOLUTIONS_REFUSED = {
    "two values for one": ("5 \\text{ or } 6", "5"),
    "plus or minus for one": ("5 \\pm 1", "5"),
    "named roots for one": ("x = 7 \\text{ or } x = -7", "7"),
    "another root": ("7 \\text{ or } 8", "7, -7"),
    "one root for two": ("7", "\\pm 7"),
    "or more": ("5 \\text{ or more}", "5"),
    "a list or a value": ("3, 5 \\text{ or } 8", "3, 5"),
    "not one term after the sign": ("1 \\pm \\sqrt{5} + 1", "1+\\sqrt5, 1-\\sqrt5"),
    "a box inside": ("7 \\text{ or } \\boxed{8}", "7, 8"),
}


@pytest.mark.parametrize("response, gold", SOLUTIONS_PAID.values(), ids=SOLUTIONS_PAID)
def test_solutions_written_with_or_and_or_pm_are_a_list(response, gold):
    assert is_equivalent(response, gold)


@pytest.mark.parametrize("response, gold", SOLUTIONS_REFUSED.values(), ids=SOLUTIONS_REFUSED)
def test_solutions_against_one_value_or_another_list_are_refused(response, gold):
    assert not is_equivalent(response, gold)


NAMED_PAID = {
    "named values for a tuple": ("x = 4, y = -3", "(4,-3)"),
    "a named tuple": ("(x, y) = (4, -3)", "(4,-3)"),
    "a tuple for named values": ("(4,-3)", "x = 4, y = -3"),
    "named values for a list": ("x = 4, y = -3", "4, -3"),
    "named values joined by and": ("x = -6 \\text{ and } y = 10", "(-6,10)"),
}
NAMED_REFUSED = {
    "named values in another order": ("y = -3, x = 4", "(4,-3)"),  # read in the order written
    "another value": ("x = 4, y = -2", "(4,-3)"),
    "a named tuple, another value": ("(x, y) = (4, -2)", "(4,-3)"),
    "one name twice": ("x = 4, x = -3", "(4,-3)"),
    "joined by and, in another order": ("y = 10 \\text{ and } x = -6", "(-6,10)"),
    "joined by or": ("x = -6 \\text{ or } y = 10", "(-6,10)"),
    "a chain": ("(x, y) = (4, -3) = (5,6)", "(4,-3)"),
    "two values for one": ("x = 4, y = -3", "4"),
}


@pytest.mark.parametrize("response, gold", NAMED_PAID.values(), ids=NAMED_PAID)
def test_a_named_left_side_gives_its_values(response, gold):
    assert is_equivalent(response, gold)


@pytest.mark.parametrize("response, gold", NAMED_REFUSED.values(), ids=NAMED_REFUSED)
def test_named_values_out_of_order_or_wrong_are_refused(response, gold):
    assert not is_equivalent(response, gold)


SETS_PAID = {
    "a union in another order": ("(5, \\infty) \\cup (-\\infty, 2)", "(-\\infty, 2) \\cup (5, \\infty)"),
    "all reals but a point": ("\\mathbb{R} \\setminus \\{5\\}", "(-\\infty,5)\\cup(5,\\infty)"),
    "the reverse": ("(-\\infty,5)\\cup(5,\\infty)", "\\mathbb{R}\\setminus\\{5\\}"),
    "backslash for setminus": ("\\mathbb{R}\\backslash\\{9\\}", "(-\\infty,9)\\cup(9,\\infty)"),
    "inequalities joined by or": ("x<2 \\text{ or } x>7", "(-\\infty,2)\\cup(7,\\infty)"),
}
SETS_REFUSED = {
    "another bound": ("x<2 \\text{ or } x>8", "(-\\infty,2)\\cup(7,\\infty)"),
    "a closed end for an open one": ("x \\le 2 \\text{ or } x>7", "(-\\infty,2)\\cup(7,\\infty)"),
    "all reals but another point": ("\\mathbb{R} \\setminus \\{6\\}", "(-\\infty,5)\\cup(5,\\infty)"),
    "all reals but two points": ("\\mathbb{R}\\setminus\\{5, 6\\}", "(-\\infty,5)\\cup(5,\\infty)"),
    "backslash, another point": ("\\mathbb{R}\\backslash\\{8\\}", "(-\\infty,9)\\cup(9,\\infty)"),
    "a union for one interval": ("(5, \\infty) \\cup (-\\infty, 2)", "(-\\infty, 2)"),
    "inequalities joined by and": ("x<2 \\text{ and } x>7", "(-\\infty,2)\\cup(7,\\infty)"),
}


@pytest.mark.parametrize("response, gold", SETS_PAID.values(), ids=SETS_PAID)
def test_a_set_of_reals_is_equal_however_it_is_written(response, gold):
    assert is_equivalent(response, gold)


@pytest.mark.parametrize("response, gold", SETS_REFUSED.values(), ids=SETS_REFUSED)
def test_another_set_of_reals_is_refused(response, gold):
    assert not is_equivalent(response, gold)


CHOICES = {  # (response, gold, paid)
    "letter and value for the letter": ("\\boxed{\\textbf{(B) }18}", "B", True),
    "letter and value for the value": ("\\boxed{\\textbf{(B) }18}", "18", True),
    "value for a lettered gold": ("\\boxed{18}", "(B) 18", True),
    "another letter": ("\\boxed{\\textbf{(B) }18}", "C", False),
    "another value": ("\\boxed{\\textbf{(B) }18}", "19", False),
    "a hedged value": ("\\boxed{(B) 18 \\text{ or } 19}", "18", False),
    "two values": ("\\boxed{(B) 18, 19}", "18", False),
    "two letters": ("\\boxed{(B) (C)}", "B", False),
}


@pytest.mark.parametrize("response, gold, paid", CHOICES.values(), ids=CHOICES)
def test_a_choice_letter_with_its_value_pays_against_the_letter_or_the_value(response, gold, paid):
    from tandem.grading.grader import grade

    assert grade(response, gold) is paid


# ----------------------------------------------------------------------------- issue 60, held-out forms
# Each rule of model_spec/GRADER.md's "Answer forms" table, with its refusals beside it.

APPROXIMATION = {  # (response, gold, paid): an exact value then `\approx` a decimal, in the box
    "pi over four": ("\\frac{\\pi}{4} \\approx 0.785", "\\frac{\\pi}{4}", True),
    "a multiple of a root": ("2\\sqrt{2} \\approx 2.83", "2\\sqrt{2}", True),
    "a name, a power of e": ("y = e^2 \\approx 7.389", "e^2", True),
    "a logarithm": ("\\ln 2 \\approx 0.693", "\\ln 2", True),
    "cut, not rounded": ("\\sqrt{2} \\approx 1.414", "\\sqrt2", True),
    "in brackets after it": ("\\frac{\\pi}{4} \\ (\\approx 0.785)", "\\frac{\\pi}{4}", True),
    "unicode sign": ("\\frac{\\pi}{4} ≈ 0.785", "\\frac{\\pi}{4}", True),
    "with a unit on both": ("4\\pi \\text{ cm}^2 \\approx 12.57 \\text{ cm}^2", "4\\pi", True),
    "the approximation alone": ("\\approx 0.785", "\\frac{\\pi}{4}", False),
    "a decimal alone for an irrational gold": ("0.785", "\\frac{\\pi}{4}", False),
    "a wrong exact value, its own right decimal": ("\\frac{\\pi}{3} \\approx 1.047", "\\frac{\\pi}{4}", False),
    "a wrong exact value, the gold's decimal": ("\\frac{\\pi}{3} \\approx 0.785", "\\frac{\\pi}{4}", False),
    "a wrong decimal": ("\\pi \\approx 3.15", "\\pi", False),
    "a decimal off by more than its last place": ("\\sqrt{2} \\approx 1.5", "\\sqrt{2}", False),
    "against the decimal gold": ("\\frac{\\pi}{4} \\approx 0.785", "0.785", False),
    "a variable's approximation": ("x \\approx 0.785", "\\frac{\\pi}{4}", False),
}
NAMED_LEFT_SIDE = {  # a name before the only `=`, the value after it
    "a segment": ("AB = 12", "12", True),
    "an angle with degrees": ("\\angle PQR = 110^\\circ", "110^\\circ", True),
    "a measure of an angle": ("m\\angle ABC = 45^\\circ", "45", True),
    "a function's formula": ("f(x) = 3x + 2", "3x+2", True),
    "a segment, a root": ("BC = 2\\sqrt{13}", "2\\sqrt{13}", True),
    "an expectation": ("E[X] = 6", "6", True),
    "a probability": ("P(A) = \\frac{1}{2}", "0.5", True),
    "a term of a sequence": ("a_{10} = 55", "55", True),
    "an area in brackets": ("[\\triangle ABC] = 24", "24", True),
    "a modulus": ("|z| = 5", "5", True),
    "an inverse function": ("f^{-1}(3) = 2", "2", True),
    "a name in words": ("\\text{Area} = 24", "24", True),
    "a chain whose every side is the value": ("AB = \\sqrt{52} = 2\\sqrt{13}", "2\\sqrt{13}", True),
    "an equation for an equation gold": ("y = 1 + 2x", "y = 2x+1", True),
    "a value named for a value gold": ("x = 5", "x=5", True),
    "another value": ("AB = 13", "12", False),
    "a chain whose last side differs": ("AB = 12 = 13", "12", False),
    "a chain whose first side differs": ("AB = 13 = 12", "12", False),
    "a coefficient on the left is an equation": ("2x = 4", "4", False),
    "a power on the left is an equation": ("x^2 = 4", "4", False),
    "a sum on the left is an equation": ("x + y = 5", "5", False),
    "a value where the gold is an equation": ("x = 3", "y = 2x+1", False),
    "the right side alone where the gold is an equation": ("2x+1", "y = 2x+1", False),
    "another equation": ("y = 2x + 2", "y = 2x+1", False),
    "a named value hedged": ("AB = 12 \\text{ or } 13", "12", False),
}
COMPLEX = {
    "a signed coefficient in brackets": ("2 + (-3)i", "2-3i", True),
    "over a common denominator": ("\\frac{3-4i}{5}", "\\frac{3}{5} - \\frac{4}{5}i", True),
    "i first, then a product": ("-i \\cdot 3", "-3i", True),
    "an upright i": ("3 - 4\\mathrm{i}", "3-4i", True),
    "decimals for fractions": ("0.6 - 0.8i", "\\frac35 - \\frac45 i", True),
    "the terms in another order": ("3i+2", "2+3i", True),
    "i squared is minus one": ("4i^2", "-4", True),
    "another imaginary part": ("2+3i", "2-3i", False),
    "the parts swapped": ("3-2i", "2-3i", False),
    "no imaginary part": ("2-3", "2-3i", False),
    "another numerator": ("\\frac{3+4i}{5}", "\\frac{3}{5} - \\frac{4}{5}i", False),
    "a sign lost": ("i \\cdot 3", "-3i", False),
}
INTERVALS_AND_SETS = {
    "plus infinity in a union": ("(-\\infty,0]\\cup[2,+\\infty)", "(-\\infty, 0] \\cup [2, \\infty)", True),
    "plus infinity in an interval": ("[2, +\\infty)", "[2,\\infty)", True),
    "plus infinity, another end": ("(-\\infty,0)\\cup[2,+\\infty)", "(-\\infty, 0] \\cup [2, \\infty)", False),
    "plus infinity, another bound": ("[3,+\\infty)", "[2,\\infty)", False),
    "a set for a list": ("\\{-3, 2\\}", "-3, 2", True),
    "a set in another order": ("\\{2, -3\\}", "-3, 2", True),
    "a list for a set": ("-3, 2", "\\{-3, 2\\}", True),
    "a set of one for its value": ("\\{5\\}", "5", True),
    "a wrong set": ("\\{-3, 1\\}", "-3, 2", False),
    "a set with a value more": ("\\{-3, 2, 5\\}", "-3, 2", False),
    "a set with a value less": ("\\{-3\\}", "-3, 2", False),
    "a tuple is not a set": ("(-3, 2)", "-3, 2", False),
    "a set of two for one value": ("\\{5, 6\\}", "5", False),
}
MIXED_NUMBERS = {
    "a TeX space": ("3\\ 5/6", "\\frac{23}{6}", True),
    "a thin space": ("3\\,5/6", "\\frac{23}{6}", True),
    "a tie": ("3~5/6", "\\frac{23}{6}", True),
    "a space before \\frac": ("3 \\frac{5}{6}", "\\frac{23}{6}", True),
    "negative": ("-3\\ 5/6", "-\\frac{23}{6}", True),
    "the gold written so": ("\\frac{23}{6}", "3\\ 5/6", True),
    "a product": ("3\\cdot 5/6", "\\frac{23}{6}", False),
    "the digits run together": ("35/6", "\\frac{23}{6}", False),
    "another fraction part": ("3\\ 5/7", "\\frac{23}{6}", False),
    "an improper fraction part": ("3\\ 7/6", "\\frac{25}{6}", False),
    "read as digits": ("3\\ 5/6", "\\frac{35}{6}", False),
    "a sign lost": ("-3\\ 5/6", "\\frac{23}{6}", False),
}
ISSUE_60_FORMS = {f"{group}: {name}": row for group, table in (
    ("approximation", APPROXIMATION), ("named", NAMED_LEFT_SIDE), ("complex", COMPLEX),
    ("intervals and sets", INTERVALS_AND_SETS), ("mixed number", MIXED_NUMBERS)) for name, row in table.items()}


@pytest.mark.parametrize("response, gold, paid", ISSUE_60_FORMS.values(), ids=ISSUE_60_FORMS)
def test_each_answer_form_pays_as_the_rules_table_says(response, gold, paid):
    from tandem.grading.grader import grade

    assert grade(f"So the answer is $\\boxed{{{response}}}$.", gold) is paid


DISPLAY = {  # (response, gold, paid): no box, a line that is only "Final Answer", display math after it
    "bold line, display math": ("We compute.\n\n**Final Answer**\n\\[ \\sqrt{10} \\]", "\\sqrt{10}", True),
    "on lines of their own": ("**Final Answer**\n\n\\[\n\\sqrt{10}\n\\]\n", "\\sqrt{10}", True),
    "with a colon inside the bold": ("**Final Answer:**\n$$\\sqrt{10}$$", "\\sqrt{10}", True),
    "the last such block": ("**Final Answer**\n\\[ 3 \\]\n\nWait.\n\n**Final Answer**\n\\[ \\sqrt{10} \\]",
                            "\\sqrt{10}", True),
    "another value": ("**Final Answer**\n\\[ \\sqrt{11} \\]", "\\sqrt{10}", False),
    "a hedge after it": ("**Final Answer**\n\\[ \\sqrt{10} \\]\nor maybe 3", "\\sqrt{10}", False),
    "the last box still wins": ("\\boxed{3}\n\n**Final Answer**\n\\[ \\sqrt{10} \\]", "\\sqrt{10}", False),
    "an earlier block is not the answer": ("**Final Answer**\n\\[ \\sqrt{10} \\]\n\n**Final Answer**\n\\[ 3 \\]",
                                           "\\sqrt{10}", False),
}


@pytest.mark.parametrize("response, gold, paid", DISPLAY.values(), ids=DISPLAY)
def test_a_final_answer_line_then_display_math_is_read_when_there_is_no_box(response, gold, paid):
    from tandem.grading.grader import grade

    assert grade(response, gold) is paid


def test_two_clearly_different_values_are_unequal_without_asking_math_verify():
    from tandem.grading import grader

    before = grader.stats(this_thread=True)["math_verify"]
    assert not is_equivalent("3.1416", "\\pi")
    assert not is_equivalent("2\\sqrt{3}", "3\\sqrt{2}")
    assert grader.stats(this_thread=True)["math_verify"] == before
    assert is_equivalent("\\sqrt{12}", "2\\sqrt{3}")  # equal values still go to math-verify, and pay
    assert not is_equivalent("\\pi + 10^{-30}", "\\pi")  # too close for floats: math-verify and the exact test


def test_the_numeric_value_refuses_any_reading_math_verify_might_not_share():
    from tandem.grading.answer import numeric_value

    ambiguous_forms = ("\\ln 2 \\cdot 3", "1/2\\pi", "\\sqrt{2}3", "\\sin 2\\pi", "2^{3}^{2}", "3!", "x + 1", "3i", "\\infty")
    for ambiguous in ambiguous_forms:
        assert numeric_value(tokenize(ambiguous)) is None, ambiguous
    assert numeric_value(tokenize("\\log 100")) == pytest.approx(2.0)  # base 10, as math-verify reads it
    assert numeric_value(tokenize("\\frac{\\pi}{4}")) == pytest.approx(0.7853981633974483)


def test_the_new_forms_nested_deep_get_a_verdict_and_count_no_error():
    from tandem.grading import grader
    from tandem.grading.grader import grade

    shapes = ["(" * 400 + "5" + ")" * 400, "(" * 400 + "\\approx 5" + ")" * 400, "[" * 450 + "A" + "]" * 450 + " = 5",
              "|" * 900 + " = 5", "\\ln " * 240 + "2 \\approx 0.5", "AB" + " = 5" * 240, "3\\ " * 300 + "5/6",
              "\\overline{" * 90 + "A" + "}" * 90 + " = 5", "2^{" * 190 + "2" + "}" * 190 + " \\approx 1.0"]
    before = grader.stats()["errors"]
    verdicts = [grade("\\boxed{" + s[:990] + "}", "5", timeout_s=1.0) for s in shapes]
    assert grader.stats()["errors"] == before
    assert verdicts[0] is True and verdicts[5] is True  # `((5))` is 5 however deep; `AB = 5 = 5 = ...` is 5
    assert not any(verdicts[1:5] + verdicts[6:])


def test_a_name_takes_names_and_numbers_as_arguments_never_a_sum():
    assert is_equivalent("f(-1) = 3", "3") and is_equivalent("P(X = 3) = 0.2", "\\frac15")
    assert is_equivalent("P(\\text{sum} = 7) = \\frac{1}{6}", "\\frac16")  # words of text are names too
    assert not is_equivalent("P(\\text{sum} = 7) = \\frac{1}{7}", "\\frac16")
    assert not is_equivalent("x(y-9)=0", "x(y-1)=0")  # an equation, found by the generator from a real gold
    assert not is_equivalent("24 01/100", "\\frac{2401}{100}") and is_equivalent("1 7/10", "\\frac{17}{10}")
