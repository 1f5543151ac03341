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
