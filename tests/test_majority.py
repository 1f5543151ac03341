"""Maj@k (`tandem_eval.core.majority`): the answer most samples give, grouped as the grader groups answers.

Cases are built from every gold of the shared benchmarks and the toy task with the grader
generator's own right and wrong forms (`tandem_eval.analysis.grader_generator`), so the vote
is tested on answers written as the golds are, not on forms chosen for this file.
"""

from __future__ import annotations

import random

import pytest

from tandem_eval.analysis.grader_corpus import BENCHMARK_FILES
from tandem_eval.analysis.grader_generator import benchmark_golds, cases_for
from tandem_eval.core.majority import maj_at_k, majority_answer, majority_correct
from tandem_app.task import generate_problems

BOXED = "So the final answer is $\\boxed{{{}}}$."
SHARE_OF_GOLDS = 0.1  # a fixed-seed sample of the distinct golds keeps the main suite fast (all: scripts)


def vote_sets(golds, seed: int = 0):
    """Per gold: its right forms (at least two distinct texts) and one wrong answer the grader refuses."""
    rng = random.Random(seed)
    for gold in golds:
        cases = cases_for(gold, rng)
        right = list(dict.fromkeys(c.response for c in cases if c.correct))
        wrong = [c.response for c in cases if not c.correct and c.kind == "digit_changed"]
        if len(right) >= 2 and wrong:
            yield gold, right, wrong[0]


@pytest.fixture(scope="module")
def real_golds(shared_data) -> list[str]:
    golds = sorted(set(map(str, benchmark_golds(shared_data, BENCHMARK_FILES))))
    golds += sorted({p.answer for p in generate_problems("test", 200)})
    rng = random.Random(0)
    return [g for g in golds if rng.random() < SHARE_OF_GOLDS]


def test_right_answers_written_differently_outvote_a_repeated_wrong_one(real_golds):
    """Three right forms (boxed, sentence, decimal, ...) against two copies of one wrong answer: right wins."""
    checked = 0
    for gold, right, wrong in vote_sets(real_golds):
        votes = [right[i % len(right)] for i in range(3)] + [wrong, wrong]
        assert majority_correct(votes, gold), (gold, votes)
        checked += 1
    assert checked >= 100


def test_a_repeated_wrong_answer_outvotes_scattered_right_forms(real_golds):
    """Two right forms against three copies of one wrong answer: the wrong answer is the majority."""
    checked = 0
    for gold, right, wrong in vote_sets(real_golds, seed=1):
        votes = [right[0], wrong, right[1], wrong, wrong]
        assert not majority_correct(votes, gold), (gold, votes)
        checked += 1
    assert checked >= 100


def test_a_tie_goes_to_the_answer_seen_first_and_abstentions_do_not_vote():
    assert majority_answer([BOXED.format(7), BOXED.format(9), "no answer here", BOXED.format(9), BOXED.format(7)]) == "7"
    assert majority_correct(["I am not sure.", BOXED.format(12), "nothing"], "12")
    assert majority_answer(["no answer", "still none"]) is None
    assert not majority_correct(["no answer"], "3")


def test_an_empty_box_or_a_lone_mark_abstains():
    """Held-out tester's case: `\\boxed{}` extracted as '' once won a tie against a real answer."""
    assert majority_answer(["\\boxed{ }", BOXED.format(3)]) == "3"
    assert majority_answer(["\\boxed{}"] * 3) is None
    assert majority_answer(["The answer is .", BOXED.format(4)]) == "4"


def test_equivalent_forms_are_one_vote():
    votes = [BOXED.format("\\frac{1}{2}"), BOXED.format("0.5"), BOXED.format(3), BOXED.format(3)]
    assert majority_answer(votes) == "\\frac{1}{2}"  # 2 - 2: the class seen first
    assert majority_correct(votes + [BOXED.format("\\dfrac12")], "1/2")


def test_maj_at_k_is_the_share_of_problems_whose_majority_is_right():
    samples = [[BOXED.format(4)] * 3, [BOXED.format(5), BOXED.format(6), BOXED.format(6)], ["none"]]
    assert maj_at_k(samples, ["4", "5", "1"]) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="2 problems' samples for 3 golds"):
        maj_at_k(samples[:2], ["4", "5", "1"])
    with pytest.raises(ValueError, match="not one string"):  # a flat list of responses would vote per character
        maj_at_k([BOXED.format(1)], ["1"])
