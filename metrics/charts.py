"""Geometry of the dashboard's "saved per day" chart, drawn as inline SVG by the template.

Plain Python, no Django and no I/O: given one point per day (tokens and dollars
saved) it returns where every bar, line vertex, tick and label goes. The page
needs no JavaScript and no chart library from a CDN, and the numbers a test
checks (bar heights, axis maxima) are computed here rather than in a template.

Two scales share the plot: tokens (bars, left axis) and dollars (right axis:
the gross line, tokens at the blended price, and the net line, after the
prompt cache, from what the provider billed). They share one grid: each axis
steps by a "nice" amount (1, 2, 2.5 or 5 times a power of ten), so every tick
label is a round number, over the same number of steps above zero, so both
zeros are one line. A day pinch made dearer (net below zero) adds whole steps
below that line; bars grow up from it, the net line dips under it.

Dollar labels and hover titles are formatted by ``routing.formatting``,
like the card: a loss reads ``-$0.12`` everywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime

from routing.formatting import format_money

TICKS = 4  # the preferred number of grid steps above zero
STEP_CHOICES = (3, 4, 5)  # steps above zero tried; the one filling the plot best wins
MAX_DAY_LABELS = 8  # more than this and the date labels under the bars overlap
NICE_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)  # a ceiling is one of these times a power of ten
BAR_FILL = 0.7  # share of a day's slot the bar covers, leaving a gap between days


@dataclass(frozen=True)
class DayPoint:
    day: date | datetime  # a day, or the start of an hour on an hourly chart
    tokens: int
    dollars: float
    net_dollars: float = 0.0

    @property
    def hourly(self) -> bool:
        return isinstance(self.day, datetime)

    @property
    def name(self) -> str:
        """``2026-11-30`` or ``2026-11-30 14:00``: the bar's hover title."""
        return f"{self.day:%Y-%m-%d %H:%M}" if self.hourly else self.day.isoformat()

    @property
    def label(self) -> str:
        """Under the bar: ``Nov 30``, or ``14:00`` (``Nov 30 00:00`` at midnight)."""
        if not self.hourly:
            return f"{self.day:%b} {self.day.day}"
        if self.day.hour == 0:
            return f"{self.day:%b} {self.day.day} 00:00"
        return f"{self.day:%H}:00"


@dataclass(frozen=True)
class Bar:
    point: DayPoint
    x: float
    y: float
    width: float
    height: float

    @property
    def day(self) -> date:
        return self.point.day.date() if self.point.hourly else self.point.day

    @property
    def hour(self) -> int | None:
        return self.point.day.hour if self.point.hourly else None

    @property
    def tokens(self) -> int:
        return self.point.tokens

    @property
    def dollars(self) -> float:
        return self.point.dollars

    @property
    def title(self) -> str:
        return f"{self.point.name}: {self.tokens:,} tokens, {format_money(self.dollars)} saved"


@dataclass(frozen=True)
class Tick:
    position: float  # y for the vertical axes, x for the day labels
    label: str


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class SavingsChart:
    width: int
    height: int
    left: float
    top: float
    right: float
    bottom: float
    bars: tuple[Bar, ...]
    line_points: str  # the SVG polyline "x,y x,y ..."
    dots: tuple[Dot, ...]
    net_points: str  # the net-of-cache line, on the same dollar axis
    net_dots: tuple[Dot, ...]
    token_ticks: tuple[Tick, ...]
    dollar_ticks: tuple[Tick, ...]
    day_labels: tuple[Tick, ...]
    token_max: float
    dollar_max: float
    dollar_min: float
    total_tokens: int
    total_dollars: float
    total_net_dollars: float

    @property
    def empty(self) -> bool:
        return self.total_tokens == 0

    @property
    def hourly(self) -> bool:
        return bool(self.bars) and self.bars[0].point.hourly

    @property
    def plot_width(self) -> float:
        return self.right - self.left

    @property
    def plot_height(self) -> float:
        return self.bottom - self.top

    @property
    def zero_y(self) -> float:
        """Where 0 is on both axes: the bottom, unless a day went below zero."""
        return round(_y(0.0, self.dollar_max, self.top, self.bottom, self.dollar_min), 2)

    # Where the labels go, so the template does no arithmetic.
    @property
    def middle_y(self) -> float:
        return (self.top + self.bottom) / 2

    @property
    def token_label_x(self) -> float:
        return self.left - 8

    @property
    def dollar_label_x(self) -> float:
        return self.right + 8

    @property
    def day_label_y(self) -> float:
        return self.bottom + 18

    @property
    def dollar_title_x(self) -> float:
        return self.width - 10


def nice_ceiling(value: float) -> float:
    """The smallest 1/2/2.5/5 x 10^k at or above ``value``; 1 for zero or less."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in NICE_STEPS:
        ceiling = step * magnitude
        # A tolerance so 3.0000000001 (float noise) does not jump to the next step.
        if ceiling >= value * (1 - 1e-12):
            return ceiling
    return 10 * magnitude  # pragma: no cover - NICE_STEPS ends at 10


def format_tokens(value: float) -> str:
    """Compact token counts for axis labels: 950, 2.5k, 1.2M."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if value >= size:
            text = f"{value / size:.1f}".removesuffix(".0")
            return f"{text}{suffix}"
    return f"{value:g}"


def dollar_decimals(step: float) -> int:
    """Decimals that print every multiple of ``step`` exactly (at least cents, at most 8)."""
    for decimals in range(2, 9):
        if abs(round(step, decimals) - step) <= step * 1e-9:
            return decimals
    return 8


def format_dollars(value: float, step: float) -> str:
    """Dollar labels with just enough decimals to tell ticks ``step`` apart; ``-$0.50``."""
    if abs(value) < step * 1e-9:
        return "$0"
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value):.{dollar_decimals(step)}f}"


@dataclass(frozen=True)
class Grid:
    """Both axes' steps: ``below`` steps under zero, ``above`` over it, on each axis."""

    token_step: float
    dollar_step: float
    below: int
    above: int

    def span(self, step: float) -> tuple[float, float]:
        """(lowest, highest) grid line of the axis whose lines are ``step`` apart."""
        return -step * self.below, step * self.above


def _steps(value: float, step: float) -> int:
    # The tolerance keeps float noise (0.30000000000000004 / 0.1) from adding a step.
    return math.ceil(value / step * (1 - 1e-12)) if value > 0 else 0


def shared_grid(token_high: float, dollar_high: float, dollar_low: float) -> Grid:
    """Nice steps for both axes over one set of grid lines, zero on one of them.

    Each count of steps above zero in ``STEP_CHOICES`` gives each axis its
    smallest nice step; the count whose bars and dollar line fill the most of
    the plot wins (``TICKS`` on a tie).
    """
    dollar_low = min(dollar_low, 0.0)
    best = None
    for above in STEP_CHOICES:
        dollar_step = nice_ceiling(max(dollar_high, 0.0) / above)
        below = _steps(-dollar_low, dollar_step)
        token_step = nice_ceiling(token_high / above)
        fill = (token_high / (token_step * above) if token_high > 0 else 0) + (
            (dollar_high - dollar_low) / (dollar_step * (above + below))
        )
        key = (round(fill, 9), above == TICKS)
        if best is None or key > best[0]:
            best = (key, Grid(token_step, dollar_step, below, above))
    return best[1]


def _y(value: float, maximum: float, top: float, bottom: float, minimum: float = 0.0) -> float:
    return bottom - ((value - minimum) / (maximum - minimum)) * (bottom - top)


def savings_chart(
    points: list[DayPoint],
    width: int = 1100,
    height: int = 300,
    margin_left: int = 64,
    margin_right: int = 84,
    margin_top: int = 16,
    margin_bottom: int = 34,
) -> SavingsChart:
    """Lay out one bar (tokens) and one line vertex (dollars) per point, in order."""
    left, right = float(margin_left), float(width - margin_right)
    top, bottom = float(margin_top), float(height - margin_bottom)
    grid = shared_grid(
        max((p.tokens for p in points), default=0),
        max((max(p.dollars, p.net_dollars) for p in points), default=0.0),
        min((p.net_dollars for p in points), default=0.0),
    )
    token_min, token_max = grid.span(grid.token_step)
    dollar_min, dollar_max = grid.span(grid.dollar_step)
    zero = _y(0.0, token_max, top, bottom, token_min)
    slot = (right - left) / max(len(points), 1)
    bar_width = slot * BAR_FILL

    bars, dots, vertices, net_dots, net_vertices = [], [], [], [], []
    for i, point in enumerate(points):
        center = left + slot * (i + 0.5)
        bar_top = _y(point.tokens, token_max, top, bottom, token_min)
        bars.append(
            Bar(
                point=point,
                x=round(center - bar_width / 2, 2),
                y=round(bar_top, 2),
                width=round(bar_width, 2),
                height=round(zero - bar_top, 2),
            )
        )
        line_y = round(_y(point.dollars, dollar_max, top, bottom, dollar_min), 2)
        vertices.append(f"{center:.2f},{line_y:.2f}")
        dots.append(Dot(round(center, 2), line_y, f"{point.name}: {format_money(point.dollars)}"))
        net_y = round(_y(point.net_dollars, dollar_max, top, bottom, dollar_min), 2)
        net_vertices.append(f"{center:.2f},{net_y:.2f}")
        net_title = f"{point.name}: {format_money(point.net_dollars)} net of the cache"
        net_dots.append(Dot(round(center, 2), net_y, net_title))

    steps = range(-grid.below, grid.above + 1)
    token_ticks = tuple(
        # No label under zero: tokens saved are never negative, the steps are the dollars'.
        Tick(
            round(_y(grid.token_step * i, token_max, top, bottom, token_min), 2),
            format_tokens(grid.token_step * i) if i >= 0 else "",
        )
        for i in steps
    )
    dollar_ticks = tuple(
        Tick(
            round(_y(grid.dollar_step * i, dollar_max, top, bottom, dollar_min), 2),
            format_dollars(grid.dollar_step * i, grid.dollar_step),
        )
        for i in steps
    )
    every = max(1, math.ceil(len(points) / MAX_DAY_LABELS))
    labelled = set(range(0, len(points), every))
    last = len(points) - 1
    if last > 0 and last not in labelled and last % every > every / 2:
        labelled.add(last)  # today, unless it would crowd the label before it
    day_labels = tuple(
        Tick(round(left + slot * (i + 0.5), 2), points[i].label) for i in sorted(labelled)
    )
    return SavingsChart(
        width=width,
        height=height,
        left=left,
        top=top,
        right=right,
        bottom=bottom,
        bars=tuple(bars),
        line_points=" ".join(vertices),
        dots=tuple(dots),
        net_points=" ".join(net_vertices),
        net_dots=tuple(net_dots),
        token_ticks=token_ticks,
        dollar_ticks=dollar_ticks,
        day_labels=day_labels,
        token_max=token_max,
        dollar_max=dollar_max,
        dollar_min=dollar_min,
        total_tokens=sum(p.tokens for p in points),
        total_dollars=sum(p.dollars for p in points),
        total_net_dollars=sum(p.net_dollars for p in points),
    )
