"""The grader's public names, where the evaluation suite's users find them.

The grader itself lives in the core, `tandem.grading.grader`, because training's reward
and the evaluation share it (model_spec/ARCHITECTURE.md); this module re-exports it.
"""

from tandem.grading.grader import (  # noqa: F401
    DEFAULT_TIMEOUT_S,
    STATS,
    extract_answer,
    grade,
    is_equivalent,
    last_boxed,
    normalize_answer,
    reset_stats,
    reward,
    stats,
    warm_up,
)
