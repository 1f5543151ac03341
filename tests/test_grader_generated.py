"""The reward pays no wrong answer generated from any real gold, and refuses few right ones.

From every gold of the shared benchmarks and the toy task, `tandem_eval.analysis.grader_generator`
writes wrong answers in every class a policy once used to be paid (a digit changed, a
decimal nudged in its 7th-12th place bare and in brackets, hedges hidden in nested boxes,
second spans and second sentences, a non-unit word in `\\text{}`, a superscript, a `?`,
digits split by a space, a second value) and right answers in the forms models write
(boxed, a sentence, a unit, a decimal, a percent, unicode minus and digits, thin-space
thousands). The full run is `scripts/grader_generated.py` (`model_spec/GRADER.md`).

From the other side (issue 60), every gold pays against itself and against its equivalent
renderings (brace forms, `\\dfrac`, `\\left`/`\\right`, thin spaces, script braces, unit
spellings, `x = `, set order, a trailing period, `\\displaystyle`, and issue 60's held-out forms:
an approximation after the exact value, a mixed number, a complex number arranged otherwise, a
set for a list, a named value, `+\\infty`) in both directions, and a `**Final Answer**` line with
display math, while a digit-changed control of each is never paid.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tandem_eval.analysis.grader_generator import NON_UNITS, cases_for

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("grader_generated", REPO / "scripts" / "grader_generated.py")
generated = importlib.util.module_from_spec(spec)
spec.loader.exec_module(generated)

# Right answers refused, per class, as a rate: every class measured at 0 (model_spec/GRADER.md);
# the bound leaves room for a gold added to the shared data in a form no class foresaw.
RIGHT_REFUSED_RATE_BOUND = 0.01


@pytest.fixture(scope="module")
def memo():
    """One verdict per distinct pair of parsed answers, shared by the two runs below."""
    return {}


@pytest.fixture(scope="module")
def report(shared_data, memo):
    return generated.run(shared_data, memo=memo)


@pytest.fixture(scope="module")
def must_pay_report(shared_data, report, memo):  # after `report`, so its verdicts are shared
    return generated.run(shared_data, must_pay=True, memo=memo)


def test_at_least_a_hundred_thousand_cases_from_every_gold(report):
    assert report["cases"] >= 100_000
    assert report["golds"] >= 1200  # distinct golds: AIME and GSM8K repeat integers (1,300 measured)


def test_no_wrong_answer_is_paid_in_any_class(report):
    wrong = [f for f in report["failures"] if not f["correct"]]
    assert report["wrong_paid"] == 0, wrong[:10]


def test_right_answers_are_refused_at_most_at_the_stated_rate_per_class(report):
    for kind, c in report["classes"].items():
        if c["must_pay"]:
            assert c["right_refused"] <= RIGHT_REFUSED_RATE_BOUND * c["cases"], (kind, c)


def test_every_class_is_exercised(report):
    expected = {"digit_changed", "nudged", "nudged_bracket", "nudged_gold_bracket", "nested_box_hedge",
                "second_span_hedge", "second_sentence_hedge", "text_or_hedge", "second_value_list", "text_word",
                "superscript", "question", "space_split", "boxed", "sentence", "unit", "decimal", "percent",
                "unicode_minus", "thin_space", "unicode_digits", "bracketed"}
    assert expected <= set(report["classes"])
    assert all(report["classes"][k]["cases"] >= 40 for k in expected)


def test_the_generator_labels_a_gold_the_way_a_careful_grader_would():
    import random

    cases = cases_for("\\frac{1}{3}", random.Random(0))
    by_kind = {c.kind: c for c in cases}
    assert by_kind["decimal"].response.endswith("{0.3333333}$.") and by_kind["decimal"].correct
    assert not by_kind["nudged"].correct
    assert all(not c.correct for c in cases if c.kind == "text_word")
    assert len(NON_UNITS) >= 60


def test_every_gold_pays_against_itself(must_pay_report):
    assert must_pay_report["classes"]["self"]["cases"] >= 1200
    assert must_pay_report["classes"]["self"]["right_refused"] == 0


def test_every_equivalent_rendering_class_pays_all_but_half_a_percent(must_pay_report):
    for kind, c in must_pay_report["classes"].items():
        if c["must_pay"]:
            assert c["right_refused"] <= generated.MUST_PAY_REFUSED_RATE * c["cases"], (kind, c)


def test_no_digit_changed_control_of_a_rendering_is_paid(must_pay_report):
    controls = {k: c for k, c in must_pay_report["classes"].items() if k.startswith("control_")}
    assert controls and all(not c["must_pay"] for c in controls.values())
    assert must_pay_report["wrong_paid"] == 0, [f for f in must_pay_report["failures"] if not f["correct"]][:10]


def test_every_rendering_class_is_exercised_in_both_directions(must_pay_report):
    classes = must_pay_report["classes"]
    for kind in ("brace_less", "braced", "dfrac", "tfrac", "left_right", "thin_space", "script_braces",
                 "script_brace_less", "unit_spelling", "assignment", "set_order", "trailing_period", "displaystyle",
                 # issue 60's held-out forms, where a gold's form allows them
                 "approximation", "mixed_number", "complex_arrangement", "set_or_list", "named_value", "plus_infinity"):
        assert classes[kind]["cases"] >= 3 and classes[kind + "_as_gold"]["cases"] == classes[kind]["cases"], kind
    assert classes["final_answer_display"]["cases"] >= 1200  # a response form: graded one way, from every gold
    assert classes["control_final_answer_display"]["cases"] >= 1000


def test_a_gold_with_a_unit_refuses_another_unit(report):
    c = report["classes"]["wrong_unit"]
    assert c["cases"] >= 10 and c["wrong_paid"] == 0 and not c["must_pay"]
