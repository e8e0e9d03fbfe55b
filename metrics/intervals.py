"""Confidence intervals for the arm comparisons and the quality figures.

A figure from a sample of conversations is shown with its sample size and a
95 % interval, and a difference between two arms is called significant only
when its interval leaves out zero: a user reading "holdout $0.41, pinch
$0.38" must be told whether that is a finding or noise.

* rates (re-fetches per result, errors per result): Wilson's score interval,
  which stays inside [0, 1] and behaves at 0 successes, where the normal one
  collapses; the difference of two rates: Newcombe's hybrid score interval
  (method 10), built from the two Wilson intervals;
* means (cost per conversation, turns per task): Student's t interval, and
  for the difference of two means Welch's t interval (Welch-Satterthwaite
  degrees of freedom, rounded down: a little wider, never narrower). Both
  need only each sample's ``Moments`` (size, sum, sum of squares), which
  the database adds up over the conversations' summary rows
  (metrics/quality.py) without returning a value per conversation: at a
  team's 100,000 conversations a month the values alone took longer to
  fetch than every other figure of /metrics. The t interval replaces a
  bootstrap for small samples, which needed every value; at the sizes the
  bootstrap served (under 200) t's interval is wider, never narrower, than
  the normal one, and the same every read.

Pure: no database, no randomness. The trials behind a rate (turns of one
conversation) are not independent, so a rate's interval is narrower than the
truth; the conversation-level means (cost, turns per task) do not have that
problem.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass

Z = 1.959963984540054  # the 97.5th percentile of the normal: 95 % two-sided
EXACT_T_BELOW = 100  # degrees of freedom under this: t's quantile solved exactly
CONFIDENCE = 0.95


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


@dataclass(frozen=True)
class Moments:
    """A sample as its size, sum and sum of squares: all its mean's interval needs."""

    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    @classmethod
    def of(cls, values: Iterable[float]) -> Moments:
        data = [float(v) for v in values]
        return cls(len(data), math.fsum(data), math.fsum(v * v for v in data))

    @property
    def mean(self) -> float:
        return self.total / self.n

    @property
    def variance(self) -> float:
        """The sample variance (n - 1); never below 0, which rounding could otherwise give."""
        return max((self.squares - self.total * self.total / self.n) / (self.n - 1), 0.0)


def _within(t: float, df: int) -> float:
    """P(|T| <= t) for Student's T with integer ``df`` (Abramowitz and Stegun 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2:
        term = total = math.cos(theta) if df > 1 else 0.0
        for k in range(3, df - 1, 2):
            term *= c2 * (k - 1) / k
            total += term
        return 2 / math.pi * (theta + math.sin(theta) * total)
    term = total = 1.0
    for k in range(2, df - 1, 2):
        term *= c2 * (k - 1) / k
        total += term
    return math.sin(theta) * total


@functools.cache
def t_critical(df: int) -> float:
    """Student's t quantile for a two-sided 95 % interval with ``df`` degrees of freedom."""
    if df < EXACT_T_BELOW:
        low, high = 0.0, 1000.0  # t(1) is 12.7
        for _ in range(100):
            middle = (low + high) / 2
            low, high = (middle, high) if _within(middle, df) < CONFIDENCE else (low, middle)
        return (low + high) / 2
    # Cornish-Fisher's expansion (A and S 26.7.5): within 1e-7 from 100 degrees of freedom on.
    z = Z
    return (
        z
        + (z**3 + z) / 4 / df
        + (5 * z**5 + 16 * z**3 + 3 * z) / 96 / df**2
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384 / df**3
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160 / df**4
    )


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


def mean_estimate(sample: Moments) -> Estimate:
    """The mean with Student's 95 % t interval (no interval from one value)."""
    if sample.n == 0:
        return Estimate(None, None, None, 0)
    if sample.n == 1:
        return Estimate(sample.mean, None, None, 1)
    half = t_critical(sample.n - 1) * math.sqrt(sample.variance / sample.n)
    return Estimate(sample.mean, sample.mean - half, sample.mean + half, sample.n)


def moments_difference(a: Moments, b: Moments) -> Difference:
    """``mean(a) - mean(b)`` with Welch's 95 % t interval (two values a side at least)."""
    if a.n < 2 or b.n < 2:
        return NO_DIFFERENCE
    d = a.mean - b.mean
    va, vb = a.variance / a.n, b.variance / b.n
    if va + vb == 0:
        return Difference(d, d, d)
    # Welch-Satterthwaite, rounded down: fewer degrees, a wider interval.
    df = (va + vb) ** 2 / (va * va / (a.n - 1) + vb * vb / (b.n - 1))
    half = t_critical(max(int(df), 1)) * math.sqrt(va + vb)
    return Difference(d, d - half, d + half)


def mean_interval(values: Iterable[float]) -> Estimate:
    """``mean_estimate`` of a list of values (the replay and the task harness hold them)."""
    return mean_estimate(Moments.of(values))


def mean_difference(a: Iterable[float], b: Iterable[float]) -> Difference:
    """``moments_difference`` of two lists of values."""
    return moments_difference(Moments.of(a), Moments.of(b))
