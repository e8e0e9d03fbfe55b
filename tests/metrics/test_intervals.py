"""The intervals beside every compared figure: they hold the truth and say when nothing is known."""

import pytest

from metrics.intervals import mean_difference, mean_interval, rate_difference, wilson


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
    assert mean_interval([1.0, 2.0, 3.0, 10.0]) == small  # a fixed seed: the same every read
    large = mean_interval([float(i % 7) for i in range(1000)])
    assert large.low < large.value < large.high
