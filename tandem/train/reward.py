"""The verifiable reward: 1.0 when the response's final answer equals the gold answer, else 0.0.

One function, `reward(text, gold)`. It grades with the eval suite's grader
(`tandem_eval.grade`) so training and evaluation score alike; where `tandem_eval` is
not installed it falls back to exact match of the last `\\boxed{...}`
(`tandem.task.boxed_answer`), which agrees with the grader on this task's integer
answers.
"""

from __future__ import annotations

from functools import lru_cache

from tandem.task import boxed_answer


def _boxed_exact(text: str, gold: str) -> bool:
    answer = boxed_answer(text)
    return answer is not None and answer == str(gold).strip()


@lru_cache(maxsize=1)
def grader():
    """`tandem_eval.grade` if it imports, else the boxed exact-match fallback."""
    try:
        from tandem_eval import grade
    except ImportError:
        return _boxed_exact
    return grade


def grader_name() -> str:
    return "boxed-exact-match" if grader() is _boxed_exact else "tandem_eval.grade"


def reward(text: str, gold: str) -> float:
    return 1.0 if grader()(text, str(gold)) else 0.0
