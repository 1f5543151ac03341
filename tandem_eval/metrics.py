"""pass@k: the unbiased estimator of Chen et al. (2021) and its averages over benchmarks.

For one problem with n samples of which c are correct,
    pass@k = 1 - C(n-c, k) / C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k / i),
the probability that a random k-subset of the n samples holds at least one correct one.
The product form never builds the huge binomials. A benchmark's pass@k is the mean over
its problems; across benchmarks, `macro` is the mean of the benchmark means and `micro`
the mean over all problems pooled.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for c correct out of n samples. Raises ValueError unless 0 <= c <= n, 1 <= k <= n."""
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"pass_at_k: {name} must be an int, got {value!r}")
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"pass_at_k: need n >= 1 and 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass_at_k: k={k} is outside 1..n={n}; draw at least k samples per problem")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def ks_for(n: int) -> list[int]:
    """The k values reported for n samples: 1, 2, 4, ... up to n."""
    ks, k = [], 1
    while k <= n:
        ks.append(k)
        k *= 2
    return ks


def benchmark_pass_at_k(counts: Sequence[tuple[int, int]], ks: Iterable[int]) -> dict[str, float]:
    """Mean pass@k over problems, each given as (n, c)."""
    if not counts:
        raise ValueError("benchmark_pass_at_k: no problems")
    return {f"pass@{k}": sum(pass_at_k(n, c, k) for n, c in counts) / len(counts) for k in ks}


def summarize(counts_by_benchmark: Mapping[str, Sequence[tuple[int, int]]], ks: Iterable[int]) -> dict:
    """Per-benchmark pass@k plus macro (mean of benchmarks) and micro (all problems pooled) averages."""
    ks = list(ks)
    per = {name: benchmark_pass_at_k(counts, ks) for name, counts in counts_by_benchmark.items()}
    pooled = [nc for counts in counts_by_benchmark.values() for nc in counts]
    out: dict = {"benchmarks": per}
    if per:
        out["macro"] = {key: sum(v[key] for v in per.values()) / len(per) for key in next(iter(per.values()))}
        out["micro"] = benchmark_pass_at_k(pooled, ks)
    return out
