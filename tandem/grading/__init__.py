"""Grading, in the core: the RL reward during training and the scorer during evaluation.

`grade(response_text, gold) -> bool` is `is_equivalent(extract_answer(response_text), gold)`
(`grader.py` has the exact rules); `reward` is its 1.0 / 0.0. `timebound.py` bounds every
math-verify call in time, in any thread. The evaluation suite re-exports these names
(`tandem_eval.grade`, `tandem_eval.grader.is_equivalent`).
"""

from tandem.grading.grader import extract_answer, grade, is_equivalent, reward

__all__ = ["extract_answer", "grade", "is_equivalent", "reward"]
