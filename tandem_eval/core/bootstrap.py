"""Bootstrap standard errors of pass@k, resampling problems (the paper's figures' bands).

A benchmark's pass@k is the mean of per-problem unbiased estimates; its standard error is
the standard deviation, over `resamples` draws, of that mean on problems drawn with
replacement. The macro average's standard error resamples every benchmark's problems
independently in each draw and takes the mean of the benchmark means. The generator is
numpy's `default_rng(seed)`, so a seed fixes every band.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tandem.errors import TandemError
from tandem.metrics import pass_at_k

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0


def _per_problem(counts: Sequence[tuple[int, int]], k: int):
    import numpy as np

    return np.array([pass_at_k(n, c, k) for n, c in counts], dtype=float)


def pass_at_k_with_se(counts_by_benchmark: Mapping[str, Sequence[tuple[int, int]]], ks: Sequence[int],
                      resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> dict:
    """{benchmark and "macro": {"pass@k": {"mean", "se"}}}; the means are the plain (unbootstrapped) ones."""
    import numpy as np

    if resamples < 2:
        raise TandemError(f"--resamples must be >= 2, got {resamples}")
    if not counts_by_benchmark:
        raise TandemError("no benchmarks to bootstrap")
    rng = np.random.default_rng(seed)
    # one set of problem draws per benchmark, shared by every k (as one would resample the problems once)
    draws = {name: rng.integers(0, len(c), size=(resamples, len(c))) for name, c in counts_by_benchmark.items()}
    out: dict = {name: {} for name in counts_by_benchmark}
    out["macro"] = {}
    for k in ks:
        boot_means = []
        for name, counts in counts_by_benchmark.items():
            values = _per_problem(counts, k)
            boot = values[draws[name]].mean(axis=1)
            out[name][f"pass@{k}"] = {"mean": float(values.mean()), "se": float(boot.std(ddof=1))}
            boot_means.append(boot)
        macro_boot = np.mean(boot_means, axis=0)
        macro_mean = float(np.mean([out[name][f"pass@{k}"]["mean"] for name in counts_by_benchmark]))
        out["macro"][f"pass@{k}"] = {"mean": macro_mean, "se": float(macro_boot.std(ddof=1))}
    return out
