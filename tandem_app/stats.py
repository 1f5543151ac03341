"""The statistics that decide the demo's verdicts, on per-problem correct counts.

Every model answers the same held-out problems with the same number of samples each.
A model's accuracy on a problem is its correct count over its sample count; its
accuracy is the mean over problems, with the standard error (SE) of that mean over
problems. Two models are compared *paired*: the mean over problems of their
per-problem accuracy differences, with the SE of that mean, so that how hard each
problem is cancels out. (Drift, `evaluate.drift_js`, has no SE; its noise floor is the
drift between two independent sample sets of the base itself.)

Over seeds (k seeds, each giving one number) the mean's interval uses Student's t with k - 1
degrees of freedom (`t_interval`): with 3 seeds the 95% half-width is 4.30 SE, not 1.96 SE,
so "3.7 SE over 3 seeds" is not the z-score it would read as (issue 44).
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



def t_coverage(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with `df` (a positive integer) degrees of freedom, in closed form.

    With theta = atan(t / sqrt(df)): odd df, (2/pi)(theta + sin cos (1 + 2/3 cos^2 + ...));
    even df, sin (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ...) (Abramowitz & Stegun 26.7.3-4).
    """
    if df < 1 or int(df) != df:
        raise ValueError(f"degrees of freedom must be a positive integer, got {df}")
    theta = math.atan(abs(t) / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:
        term = total = 1.0
        for j in range(2, df, 2):  # factors (j - 1)/j: 1/2, 3/4, ...
            term *= c2 * (j - 1) / j
            total += term
        return s * total
    if df == 1:
        return 2 * theta / math.pi
    term = total = 1.0
    for j in range(3, df, 2):  # factors (j - 1)/j: 2/3, 4/5, ...
        term *= c2 * (j - 1) / j
        total += term
    return 2 / math.pi * (theta + s * math.cos(theta) * total)


def t_quantile(level: float, df: int) -> float:
    """The t with P(|T| < t) = `level` for `df` degrees of freedom (bisection on `t_coverage`)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    lo, hi = 0.0, 1.0
    while t_coverage(hi, df) < level:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_coverage(mid, df) < level else (lo, mid)
    return (lo + hi) / 2


def t_interval(values: Sequence[float], level: float = 0.95) -> dict:
    """{"mean", "se", "df", "t", "low", "high"}: the mean of `values` (one per seed) with its `level`
    interval, mean ± t(k - 1) SE; `low`/`high`/`t` None for a single value (no spread to read)."""
    mean, se = mean_and_se(values)
    df = len(values) - 1
    t = t_quantile(level, df) if df else None
    return {"mean": mean, "se": se, "df": df, "t": t, "level": level,
            "low": None if t is None else mean - t * se, "high": None if t is None else mean + t * se}


def over_seeds_text(values: Sequence[float], digits: int = 3) -> str:
    """`mean ± SE, 95% t(k-1) [low, high]` for a table cell; `mean (1 seed)` for one."""
    r = t_interval(values)
    if r["t"] is None:
        return f"{r['mean']:+.{digits}f} (1 seed)"
    return (f"{r['mean']:+.{digits}f} ± {r['se']:.{digits}f}, {r['level']:.0%} t({r['df']}) "
            f"[{r['low']:+.{digits}f}, {r['high']:+.{digits}f}]")
