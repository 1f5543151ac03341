"""The reward pays no wrong answer generated from any real gold, and refuses few right ones.

From every gold of the shared benchmarks and the toy task, `tandem_eval.analysis.grader_generator`
writes wrong answers in every class a policy once used to be paid (a digit changed, a
decimal nudged in its 7th-12th place bare and in brackets, hedges hidden in nested boxes,
second spans and second sentences, a non-unit word in `\\text{}`, a superscript, a `?`,
digits split by a space, a second value) and right answers in the forms models write
(boxed, a sentence, a unit, a decimal, a percent, unicode minus and digits, thin-space
thousands). The full run is `scripts/grader_generated.py` (`model_spec/GRADER.md`).
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
def report(shared_data):
    return generated.run(shared_data)


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
