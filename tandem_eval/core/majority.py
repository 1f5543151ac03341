"""Maj@k: a problem's k samples vote, and the answer most of them give is graded against the gold.

RLTR reports Maj@64 beside pass@1: a policy whose samples agree on the right answer scores
higher than one right as often but scattered. Here each sample's answer is the grader's
(`tandem.grading.extract_answer`: its last boxed answer, or its final-answer marker); answers
are one vote when the grader calls them equal (`is_equivalent`, with the class's first answer
in the gold's place), so `\\frac{1}{2}` and `0.5` vote together; a sample that states no
answer abstains, and so does one whose answer holds no letter or digit (an empty `\\boxed{}`, a
lone "."), which the grader would never call equal to anything, not even itself. An answer
joins the first class whose first answer the grader calls equal to it (the grader's equality
is not transitive: 0.5 = 50%, 50% = 50, 0.5 != 50). The class with the most votes wins, a
tie going to the class seen first (the samples' order is their sample index, so a tie is
decided the same way on every run); with no answer at all the problem is wrong.
"""

from __future__ import annotations

from collections.abc import Sequence

from tandem.grading import extract_answer, is_equivalent


def states_answer(answer: str | None) -> bool:
    """An extracted answer that can vote: it holds a letter or a digit (any script)."""
    return answer is not None and any(ch.isalnum() for ch in answer)


def majority_answer(texts: Sequence[str]) -> str | None:
    """The answer most of `texts` (one problem's samples) give, grouped by the grader's equivalence;
    None when none states one."""
    return vote([extract_answer(text) for text in texts])


def vote(answers: Sequence[str | None]) -> str | None:
    """The winning answer among extracted `answers` (None or one without a letter or digit abstains)."""
    classes: list[list] = []  # [first answer of the class, votes]
    for answer in answers:
        if not states_answer(answer):
            continue
        for c in classes:
            if is_equivalent(answer, c[0]):
                c[1] += 1
                break
        else:
            classes.append([answer, 1])
    if not classes:
        return None
    return max(classes, key=lambda c: c[1])[0]  # max keeps the first of equal counts: the class seen first


def majority_correct(texts: Sequence[str], gold) -> bool:
    """Whether the majority answer of one problem's samples equals its gold (Maj@k for k = len(texts))."""
    answer = majority_answer(texts)
    return answer is not None and is_equivalent(answer, gold)


def maj_at_k(samples: Sequence[Sequence[str]], golds: Sequence) -> float:
    """Maj@k over problems: the share whose samples' majority answer is right (k = each problem's samples)."""
    if any(isinstance(texts, str) for texts in samples):
        raise ValueError("each problem's samples are a list of responses, not one string")
    if len(samples) != len(golds):
        raise ValueError(f"{len(samples)} problems' samples for {len(golds)} golds")
    if not golds:
        raise ValueError("Maj@k of no problems")
    return sum(majority_correct(texts, gold) for texts, gold in zip(samples, golds)) / len(golds)
