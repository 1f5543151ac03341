"""The grader beside math-verify (as verl calls it) and verl 0.9.1's default math reward.

Every disagreement is listed in `model_spec/bench/grader_differential.json` (written by
`scripts/grader_differential.py`, explained in `model_spec/GRADER.md`); these tests re-run
the comparison and fail on any disagreement that is not listed, and on any listed one
that has gone away, so the list stays exact.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tandem.grading import grade
from tandem_eval.analysis.grader_corpus import ADVERSARIAL, benchmark_cases

REPO = Path(__file__).resolve().parents[1]
LISTED = json.loads((REPO / "model_spec" / "bench" / "grader_differential.json").read_text())
spec = importlib.util.spec_from_file_location("grader_differential", REPO / "scripts" / "grader_differential.py")
differential_script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(differential_script)


def assert_exactly_the_listed(result: dict, corpus: str) -> None:
    report = differential_script.listed(result, limit=200)
    for anchor, entry in LISTED[corpus]["anchors"].items():
        assert report["anchors"][anchor]["count"] == entry["count"], anchor
        if "disagreements" in entry:
            assert report["anchors"][anchor]["disagreements"] == entry["disagreements"], anchor
        assert report["anchors"][anchor]["sha256"] == entry["sha256"], anchor


@pytest.mark.parametrize("case", ADVERSARIAL, ids=lambda c: f"{c.kind}:{c.gold[:12]}")
def test_the_adversarial_corpus_gets_the_careful_human_verdict(case):
    assert grade(case.response, case.gold) is case.correct


def test_the_adversarial_corpus_has_both_verdicts_so_refusing_everything_fails():
    correct = [c.correct for c in ADVERSARIAL]
    assert 5 <= sum(correct) <= len(correct) - 30


def test_adversarial_disagreements_with_the_anchors_are_exactly_the_listed_ones():
    pytest.importorskip("verl")
    result = differential_script.differential(list(ADVERSARIAL))
    assert result["summary"]["ours"]["false_positives"] == 0
    assert_exactly_the_listed(result, "adversarial")
    assert all(d["ours_right"] for d in result["disagreements"])


def test_on_every_real_gold_ours_and_math_verify_disagree_only_where_listed(shared_data):
    pytest.importorskip("verl")
    result = differential_script.differential(benchmark_cases(shared_data))
    assert result["summary"]["ours"]["cases"] > 9000
    assert result["summary"]["ours"]["false_positives"] == 0
    assert_exactly_the_listed(result, "benchmarks")
    with_math_verify = [d for d in result["disagreements"] if d["anchor"] == "math_verify"]
    # One: a broken Minerva gold (a stray `$ $`) that ours reads to its end and math-verify fails.
    assert [(d["source"], d["ours_right"]) for d in with_math_verify] == [("minerva_math.jsonl", True)]


# ----------------------------------------------------------------------------- must pay, beside math-verify (issue 60)


def _golds_covering_every_rendering(golds, per_class: int = 3) -> list[str]:
    """A fixed sample: in the data's order, each gold that gives a rendering class fewer than
    `per_class` earlier golds gave (so every class, the rare ones too, is in it)."""
    from collections import Counter

    from tandem_eval.analysis.grader_generator import renderings

    chosen, covered = [], Counter()
    for gold in dict.fromkeys(str(g).strip() for g in golds):
        kinds = {kind for kind, _ in renderings(gold)}
        if any(covered[kind] < per_class for kind in kinds):
            chosen.append(gold)
            covered.update(kinds)
    return chosen


def test_every_must_pay_class_where_ours_and_math_verify_disagree_names_the_rule_that_decides(shared_data):
    pytest.importorskip("verl")
    from tandem_eval.analysis.grader_corpus import BENCHMARK_FILES
    from tandem_eval.analysis.grader_generator import benchmark_golds, generate_must_pay

    golds = _golds_covering_every_rendering(benchmark_golds(shared_data, BENCHMARK_FILES))
    kinds = {case.kind for case in generate_must_pay(golds)}
    assert {"approximation_as_gold", "mixed_number", "named_value", "final_answer_display", "control_dfrac"} <= kinds
    table = differential_script.must_pay_differential(None, per_class=4, golds=golds)
    assert table, "the sample shows no disagreement at all: it no longer tests the listing"
    assert {kind: row["rule"] for kind, row in table.items() if not row["rule"]} == {}
    # both directions are in the sample, and every class the generator writes has a rule to name
    assert any(kind.endswith("_as_gold") for kind in kinds)
    assert [kind for kind in sorted(kinds) if differential_script.rule_for(kind) is None] == []
    # ours pays no control that math-verify refuses
    assert all(not row["ours_pays_math_verify_not"] for kind, row in table.items() if not row["correct"])


def test_a_class_with_no_listed_rule_is_reported_without_one():
    assert differential_script.rule_for("control_named_value") == differential_script.MUST_PAY_RULES["control"]
    assert differential_script.rule_for("a_class_nobody_listed_as_gold") is None
