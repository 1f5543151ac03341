"""tandem_eval: pass@k, benchmark loading, the solo / handoff evaluations, and the grader's names.

Public names other code relies on: `grade(response_text, gold) -> bool` (the RL reward and
the eval scorer), `pass_at_k(n, c, k) -> float`, and `extract_answer` / `is_equivalent`.
"""

from tandem_eval.grader import extract_answer, grade, is_equivalent
from tandem.metrics import pass_at_k

__all__ = ["extract_answer", "grade", "is_equivalent", "pass_at_k"]
