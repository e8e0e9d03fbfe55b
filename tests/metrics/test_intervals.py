"""The intervals beside every compared figure: they hold the truth and say when nothing is known."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metrics.intervals import (
    Moments,
    mean_difference,
    mean_estimate,
    mean_interval,
    moments_difference,
    rate_difference,
    t_critical,
    wilson,
)


@pytest.mark.parametrize(
    "k, n, low, high",
    [
        (0, 10, 0.0, 0.2775),
        (5, 10, 0.2366, 0.7634),
        (10, 10, 0.7225, 1.0),
        (1, 100, 0.0018, 0.0545),
    ],
)
def test_wilson_matches_the_published_interval(k, n, low, high):
    estimate = wilson(k, n)
    assert estimate.low == pytest.approx(low, abs=1e-4)
    assert estimate.high == pytest.approx(high, abs=1e-4)
    assert estimate.n == n


def test_no_trials_is_no_estimate_and_no_difference():
    assert wilson(0, 0).value is None
    assert rate_difference(wilson(0, 0), wilson(1, 2)).significant is False
    assert mean_interval([]).value is None
    assert mean_difference([1.0], [2.0, 3.0]).value is None


def test_a_clear_difference_is_significant_and_a_small_sample_is_not():
    assert rate_difference(wilson(80, 100), wilson(20, 100)).significant
    assert not rate_difference(wilson(3, 5), wilson(2, 5)).significant
    assert mean_difference([10.0] * 50 + [11.0] * 50, [1.0] * 50 + [2.0] * 50).significant
    assert not mean_difference([1.0, 2.0, 3.0], [1.5, 2.5, 2.0]).significant


def test_mean_intervals_hold_the_mean_and_repeat_exactly():
    small = mean_interval([1.0, 2.0, 3.0, 10.0])
    assert small.low < small.value < small.high
    assert mean_interval([1.0, 2.0, 3.0, 10.0]) == small  # no randomness: the same every read
    large = mean_interval([float(i % 7) for i in range(1000)])
    assert large.low < large.value < large.high


@pytest.mark.parametrize(
    "df, quantile",
    # Student's t, 97.5th percentile, from the published tables.
    [
        (1, 12.7062),
        (2, 4.3027),
        (4, 2.7764),
        (9, 2.2622),
        (29, 2.0452),
        (99, 1.9842),
        (100, 1.9840),
        (120, 1.9799),
        (1000, 1.9623),
    ],
)
def test_t_quantiles_match_the_published_table(df, quantile):
    assert t_critical(df) == pytest.approx(quantile, abs=1e-4)


def test_a_small_sample_gets_the_t_interval_of_a_textbook():
    # 5.1, 4.9, 5.6, 5.8, 6.0: mean 5.48, s 0.4658, t(4) 2.7764 -> 5.48 +- 0.5784.
    estimate = mean_interval([5.1, 4.9, 5.6, 5.8, 6.0])
    assert (estimate.low, estimate.high) == pytest.approx((4.9016, 6.0584), abs=1e-3)


def test_welchs_interval_from_moments_matches_the_textbook():
    # Welch: means 20 and 22, variances 4 and 9, n 10 and 12: se 1.0724, df 19.0 -> t 2.093.
    a = Moments(10, 200.0, 4 * 9 + 10 * 20**2)
    b = Moments(12, 264.0, 9 * 11 + 12 * 22**2)
    difference = moments_difference(a, b)
    assert difference.value == pytest.approx(-2.0)
    assert difference.high - difference.value == pytest.approx(2.093 * 1.0724, abs=2e-3)
    assert not difference.significant


values = st.lists(st.integers(0, 10**6).map(lambda n: n / 1000), min_size=2, max_size=60)


@given(values)
def test_moments_summed_in_any_order_give_the_interval_of_the_values(sample):
    forwards = Moments.of(sample)
    backwards = Moments(len(sample), sum(reversed(sample)), sum(v * v for v in reversed(sample)))
    a, b = mean_estimate(forwards), mean_estimate(backwards)
    assert a.n == b.n == len(sample)
    assert a.value == pytest.approx(b.value, rel=1e-9, abs=1e-9)
    assert a.low <= a.value <= a.high
    assert a.high - a.low == pytest.approx(b.high - b.low, rel=1e-6, abs=1e-6)
    assert not math.isnan(a.low)


@given(values, values)
def test_a_difference_is_the_mirror_of_its_reverse(a, b):
    there, back = mean_difference(a, b), mean_difference(b, a)
    assert there.value == pytest.approx(-back.value, abs=1e-9)
    assert there.low == pytest.approx(-back.high, abs=1e-6)
    assert there.significant == back.significant
