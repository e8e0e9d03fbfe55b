"""Confidence intervals for the arm comparisons and the quality figures.

A figure from a sample of conversations is shown with its sample size and a
95 % interval, and a difference between two arms is called significant only
when its interval leaves out zero: a user reading "holdout $0.41, pinch
$0.38" must be told whether that is a finding or noise.

* rates (re-fetches per result, errors per result): Wilson's score interval,
  which stays inside [0, 1] and behaves at 0 successes, where the normal one
  collapses; the difference of two rates: Newcombe's hybrid score interval
  (method 10), built from the two Wilson intervals;
* means (cost per conversation, turns per task), whose distributions are
  skewed: a percentile bootstrap with a fixed seed (the same figures every
  run) below ``BOOTSTRAP_BELOW`` values, the normal interval above it, where
  the central limit holds well; the difference of two means: Welch's normal
  interval, or the bootstrap of the difference for small samples.

Pure: numpy only. The trials behind a rate (turns of one conversation) are
not independent, so a rate's interval is narrower than the truth; the
conversation-level means (cost, turns per task) do not have that problem.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z = 1.959963984540054  # the 97.5th percentile of the normal: 95 % two-sided
BOOTSTRAP_BELOW = 200  # samples smaller than this get a bootstrap interval
BOOTSTRAP_RESAMPLES = 2000
SEED = 20  # fixed, so a figure does not move between two reads of the same data


def _bounds(figure, digits: int) -> dict:
    return {
        name: None if getattr(figure, name) is None else round(getattr(figure, name), digits)
        for name in ("value", "low", "high")
    }


@dataclass(frozen=True)
class Estimate:
    """A figure with its sample size and 95 % interval (None bounds: no sample)."""

    value: float | None
    low: float | None
    high: float | None
    n: int

    def as_dict(self, digits: int = 6) -> dict:
        return {**_bounds(self, digits), "n": self.n}


@dataclass(frozen=True)
class Difference:
    """``a - b`` with its 95 % interval; significant when the interval leaves out 0."""

    value: float | None
    low: float | None
    high: float | None

    @property
    def significant(self) -> bool:
        return self.low is not None and (self.low > 0 or self.high < 0)

    def as_dict(self, digits: int = 6) -> dict:
        return {**_bounds(self, digits), "significant": self.significant}


NO_DIFFERENCE = Difference(None, None, None)


def wilson(successes: int, trials: int) -> Estimate:
    """The rate ``successes / trials`` with Wilson's 95 % score interval."""
    if trials <= 0:
        return Estimate(None, None, None, 0)
    p = successes / trials
    denominator = 1 + Z * Z / trials
    centre = (p + Z * Z / (2 * trials)) / denominator
    half = Z * math.sqrt(p * (1 - p) / trials + Z * Z / (4 * trials * trials)) / denominator
    return Estimate(p, max(centre - half, 0.0), min(centre + half, 1.0), trials)


def rate_difference(a: Estimate, b: Estimate) -> Difference:
    """Newcombe's interval for the difference of two independent rates."""
    if not a.n or not b.n:
        return NO_DIFFERENCE
    d = a.value - b.value
    low = d - math.sqrt((a.value - a.low) ** 2 + (b.high - b.value) ** 2)
    high = d + math.sqrt((a.high - a.value) ** 2 + (b.value - b.low) ** 2)
    return Difference(d, low, high)


def _bootstrap_means(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    picks = rng.integers(0, len(values), size=(BOOTSTRAP_RESAMPLES, len(values)))
    return values[picks].mean(axis=1)


def mean_interval(values: Sequence[float]) -> Estimate:
    """The mean with a 95 % interval: bootstrap for small samples, normal for large ones."""
    data = np.asarray(values, dtype=float)
    n = len(data)
    if n == 0:
        return Estimate(None, None, None, 0)
    mean = float(data.mean())
    if n == 1:
        return Estimate(mean, None, None, 1)
    if n < BOOTSTRAP_BELOW:
        means = _bootstrap_means(data, np.random.default_rng(SEED))
        low, high = np.percentile(means, [2.5, 97.5])
        return Estimate(mean, float(low), float(high), n)
    half = Z * float(data.std(ddof=1)) / math.sqrt(n)
    return Estimate(mean, mean - half, mean + half, n)


def mean_difference(a: Sequence[float], b: Sequence[float]) -> Difference:
    """``mean(a) - mean(b)`` with a 95 % interval (bootstrap when either sample is small)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) < 2 or len(y) < 2:
        return NO_DIFFERENCE
    d = float(x.mean() - y.mean())
    if min(len(x), len(y)) < BOOTSTRAP_BELOW:
        rng = np.random.default_rng(SEED)
        diffs = _bootstrap_means(x, rng) - _bootstrap_means(y, rng)
        low, high = np.percentile(diffs, [2.5, 97.5])
        return Difference(d, float(low), float(high))
    half = Z * math.sqrt(x.var(ddof=1) / len(x) + y.var(ddof=1) / len(y))
    return Difference(d, d - half, d + half)
