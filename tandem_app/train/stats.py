"""The statistics that decide the demo's verdicts, on per-problem correct counts.

Every model answers the same held-out problems with the same number of samples each.
A model's accuracy on a problem is its correct count over its sample count; its
accuracy is the mean over problems, with the standard error (SE) of that mean over
problems. Two models are compared *paired*: the mean over problems of their
per-problem accuracy differences, with the SE of that mean, so that how hard each
problem is cancels out. (Drift, `evaluate.drift_js`, has no SE; its noise floor is the
drift between two independent sample sets of the base itself.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def problem_accuracies(counts: Sequence[int], n: int) -> list[float]:
    """Per-problem accuracy: each problem's correct count over its `n` samples."""
    if n < 1:
        raise ValueError(f"samples per problem must be >= 1, got {n}")
    if any(not 0 <= c <= n for c in counts):
        raise ValueError(f"a correct count is outside [0, {n}]")
    return [c / n for c in counts]


def mean_and_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and its standard error, sqrt(sample variance / count); SE 0 for a single value."""
    if not values:
        raise ValueError("no values")
    mean = sum(values) / len(values)
    if len(values) == 1:
        return mean, 0.0
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(var / len(values))


def accuracy(counts: Sequence[int], n: int) -> tuple[float, float]:
    """A model's accuracy over problems and its SE."""
    return mean_and_se(problem_accuracies(counts, n))


def paired_difference(
    counts_a: Sequence[int], n_a: int, counts_b: Sequence[int], n_b: int
) -> tuple[float, float]:
    """Mean and SE over problems of accuracy(a) - accuracy(b), problem by problem."""
    if len(counts_a) != len(counts_b):
        raise ValueError(f"paired comparison needs the same problems: {len(counts_a)} vs {len(counts_b)}")
    a, b = problem_accuracies(counts_a, n_a), problem_accuracies(counts_b, n_b)
    return mean_and_se([x - y for x, y in zip(a, b)])

