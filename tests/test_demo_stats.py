"""The statistics behind the demo's verdicts, on made-up counts with values worked out by hand."""

from __future__ import annotations

import math

import pytest

from tandem_app.stats import accuracy, mean_and_se, paired_difference, problem_accuracies


def test_problem_accuracies_divide_each_count_by_the_samples_per_problem():
    assert problem_accuracies([0, 1, 4, 2], 4) == [0.0, 0.25, 1.0, 0.5]


def test_problem_accuracies_refuse_a_count_above_the_samples():
    with pytest.raises(ValueError, match="outside"):
        problem_accuracies([5], 4)


def test_mean_and_se_use_the_sample_variance_over_the_count():
    # values 1, 2, 3, 6: mean 3, sample variance (4 + 1 + 0 + 9) / 3 = 14/3, SE sqrt(14/3 / 4)
    mean, se = mean_and_se([1.0, 2.0, 3.0, 6.0])
    assert mean == 3.0
    assert se == pytest.approx(math.sqrt(14 / 12))


def test_a_single_value_has_zero_standard_error():
    assert mean_and_se([0.25]) == (0.25, 0.0)


def test_accuracy_is_the_mean_over_problems_with_its_standard_error():
    # per-problem accuracies 1, 0.5, 0, 0.5: mean 0.5, sample variance 0.5/3, SE sqrt(0.5/3/4)
    mean, se = accuracy([4, 2, 0, 2], 4)
    assert mean == 0.5
    assert se == pytest.approx(math.sqrt(0.5 / 12))


def test_paired_difference_is_taken_problem_by_problem():
    # a: 1, 1, 0.5, 0; b: 0.5, 0.5, 0.5, 0 -> differences 0.5, 0.5, 0, 0: mean 0.25,
    # sample variance (0.0625 * 4) / 3 = 1/12, SE sqrt(1/12 / 4) = 1/sqrt(48)
    mean, se = paired_difference([4, 4, 2, 0], 4, [2, 2, 2, 0], 4)
    assert mean == 0.25
    assert se == pytest.approx(1 / math.sqrt(48))


def test_paired_difference_cancels_what_the_problems_share():
    # Same shift (+0.25) on every problem whatever its difficulty: the SE is exactly 0,
    # while the unpaired SEs of the two accuracies are large.
    a, b = [4, 3, 1, 2], [3, 2, 0, 1]
    assert paired_difference(a, 4, b, 4) == (0.25, 0.0)
    assert accuracy(a, 4)[1] > 0.1 and accuracy(b, 4)[1] > 0.1


def test_paired_difference_allows_different_sample_counts():
    # a: 2/2, 0/2; b: 1/4, 1/4 -> differences 0.75, -0.25: mean 0.25, sample variance 0.5, SE 0.5
    assert paired_difference([2, 0], 2, [1, 1], 4) == pytest.approx((0.25, 0.5))


def test_paired_difference_refuses_different_problem_sets():
    with pytest.raises(ValueError, match="same problems"):
        paired_difference([1, 2], 4, [1], 4)


@pytest.mark.parametrize("df, t95", [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (9, 2.2622), (30, 2.0423)])
def test_the_t_quantile_matches_the_printed_table(df, t95):
    from tandem_app.stats import t_coverage, t_quantile

    assert t_quantile(0.95, df) == pytest.approx(t95, abs=5e-4)  # tables print 4 decimals
    assert t_coverage(t95, df) == pytest.approx(0.95, abs=1e-4)


def test_the_t_quantile_tends_to_the_normal_one():
    from tandem_app.stats import t_quantile

    assert t_quantile(0.95, 2000) == pytest.approx(1.95996, abs=2e-3)


def test_an_over_seed_interval_uses_t_with_k_minus_1_degrees_of_freedom():
    from tandem_app.stats import over_seeds_text, t_interval

    got = t_interval([1.0, 2.0, 3.0])  # mean 2, SE 1/sqrt(3), t(2) = 4.3027
    assert got["df"] == 2 and got["mean"] == pytest.approx(2.0) and got["se"] == pytest.approx(1 / math.sqrt(3))
    assert got["high"] - got["mean"] == pytest.approx(4.3027 / math.sqrt(3), abs=1e-3)
    assert over_seeds_text([1.0, 2.0, 3.0]) == "+2.000 ± 0.577, 95% t(2) [-0.484, +4.484]"
    assert t_interval([0.5])["low"] is None and over_seeds_text([0.5]) == "+0.500 (1 seed)"
