"""pass@k: the unbiased estimator against brute force, its errors, and benchmark averages."""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import comb

import pytest

from tandem_eval import pass_at_k
from tandem.metrics import benchmark_pass_at_k, ks_for, summarize


def _brute_force(n: int, c: int, k: int) -> float:
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_equals_the_fraction_of_k_subsets_holding_a_correct_sample(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(_brute_force(n, c, k), abs=1e-12)


def test_k_greater_than_n_raises():
    with pytest.raises(ValueError, match="k=5"):
        pass_at_k(4, 2, 5)


@pytest.mark.parametrize("n, c, k", [(4, 5, 1), (4, -1, 1), (0, 0, 1), (4, 1, 0), (4.0, 1, 1), (4, True, 1)])
def test_invalid_counts_raise(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_large_n_matches_exact_rational_arithmetic():
    n, c, k = 2000, 37, 512
    exact = 1 - Fraction(comb(n - c, k), comb(n, k))
    assert pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-12)


def test_reported_ks_are_powers_of_two_up_to_n():
    assert ks_for(1) == [1]
    assert ks_for(12) == [1, 2, 4, 8]
    assert ks_for(16) == [1, 2, 4, 8, 16]


def test_benchmark_pass_at_k_is_the_mean_over_problems():
    scores = benchmark_pass_at_k([(4, 0), (4, 2), (4, 4)], [1, 2])
    assert scores["pass@1"] == pytest.approx((0 + 0.5 + 1) / 3)
    assert scores["pass@2"] == pytest.approx((0 + 5 / 6 + 1) / 3)


def test_macro_averages_benchmarks_and_micro_pools_problems():
    out = summarize({"a": [(2, 2)], "b": [(2, 0), (2, 0), (2, 0)]}, [1])
    assert out["benchmarks"]["a"]["pass@1"] == 1.0
    assert out["macro"]["pass@1"] == pytest.approx(0.5)
    assert out["micro"]["pass@1"] == pytest.approx(0.25)
