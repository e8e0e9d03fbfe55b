"""Savings per day: one grouped query, priced like pinch_summary, laid out by metrics.charts."""

from datetime import UTC, date, datetime, timedelta

import pytest

from metrics.charts import DayPoint, format_dollars, format_tokens, nice_ceiling, savings_chart
from metrics.dashboard import daily_savings
from metrics.summary import pinch_summary, summary_window
from tests.support.decisions import decision, seed

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "value, ceiling",
    [
        (0, 1.0),
        (-3, 1.0),
        (1, 1.0),
        (1.2, 2.0),
        (2.2, 2.5),
        (3, 5.0),
        (7, 10.0),
        (10, 10.0),
        (4500, 5000.0),
        (0.00432, 0.005),
        (120_001, 200_000.0),
    ],
)
def test_nice_ceiling(value, ceiling):
    assert nice_ceiling(value) == pytest.approx(ceiling)


@pytest.mark.parametrize(
    "value, text", [(0, "0"), (950, "950"), (2500, "2.5k"), (125_000, "125k"), (1_200_000, "1.2M")]
)
def test_token_labels_are_compact(value, text):
    assert format_tokens(value) == text


@pytest.mark.parametrize(
    "value, step, text",
    [
        (0, 0.125, "$0"),
        (0.375, 0.125, "$0.375"),
        (0.0004, 0.0001, "$0.0004"),
        (6, 3, "$6.00"),
        (-0.5, 0.5, "-$0.50"),
    ],
)
def test_dollar_labels_have_just_enough_decimals(value, step, text):
    assert format_dollars(value, step) == text


def small_chart(points):
    """A 400 x 200 chart whose plot is 320 x 160, from (40, 10) to (360, 170)."""
    return savings_chart(
        points,
        width=400,
        height=200,
        margin_left=40,
        margin_right=40,
        margin_top=10,
        margin_bottom=30,
    )


def test_bars_scale_to_the_token_axis_and_the_line_to_the_dollar_axis():
    points = [
        DayPoint(date(2026, 11, 1), 0, 0.0),
        DayPoint(date(2026, 11, 2), 2500, 0.001),
        DayPoint(date(2026, 11, 3), 5000, 0.004),
    ]

    chart = small_chart(points)

    assert (chart.token_max, chart.dollar_max) == (5000.0, pytest.approx(0.005))
    heights = [bar.height for bar in chart.bars]
    assert heights == [0.0, pytest.approx(80.0), pytest.approx(160.0)]  # plot is 160 high
    assert chart.bars[2].y == chart.top
    ys = [float(v.split(",")[1]) for v in chart.line_points.split()]
    assert ys == [170.0, pytest.approx(170 - 0.2 * 160), pytest.approx(170 - 0.8 * 160)]
    assert [t.label for t in chart.token_ticks] == ["0", "1k", "2k", "3k", "4k", "5k"]
    assert [t.label for t in chart.dollar_ticks] == [
        "$0",
        "$0.001",
        "$0.002",
        "$0.003",
        "$0.004",
        "$0.005",
    ]
    assert not chart.empty and chart.total_tokens == 7500


def test_every_dollar_tick_is_a_round_number_even_with_a_loss():
    # The user's report: "$2.00000 $1.49875 $0.99750 ..." for a $2 day beside a small loss.
    points = [
        DayPoint(date(2026, 11, 1), 900_000, 2.0, net_dollars=0.3),
        DayPoint(date(2026, 11, 2), 120_000, 1.5, net_dollars=-0.005),
    ]

    chart = savings_chart(points)

    assert [t.label for t in chart.dollar_ticks] == [
        "-$0.50",
        "$0",
        "$0.50",
        "$1.00",
        "$1.50",
        "$2.00",
    ]
    assert [t.label for t in chart.token_ticks] == ["", "0", "250k", "500k", "750k", "1M"]


def test_a_day_pinch_made_dearer_puts_both_zeros_on_one_line_above_the_bottom():
    points = [
        DayPoint(date(2026, 11, 1), 1000, 0.004, net_dollars=0.002),
        DayPoint(date(2026, 11, 2), 1000, 0.004, net_dollars=-0.001),
    ]

    chart = small_chart(points)

    assert (chart.dollar_min, chart.dollar_max) == (pytest.approx(-0.001), pytest.approx(0.004))
    # Five steps over the 160-pixel plot, one of them under zero: 0 sits 32 px up.
    assert chart.zero_y == pytest.approx(138.0)
    token_zero = next(t.position for t in chart.token_ticks if t.label == "0")
    dollar_zero = next(t.position for t in chart.dollar_ticks if t.label == "$0")
    assert token_zero == dollar_zero == chart.zero_y
    assert all(bar.y + bar.height == pytest.approx(chart.zero_y) for bar in chart.bars)
    net = [float(v.split(",")[1]) for v in chart.net_points.split()]
    assert net == [pytest.approx(74.0), pytest.approx(170.0)]
    assert net[1] > chart.zero_y  # below zero on screen
    assert chart.net_dots[1].title == "2026-11-02: -$0.001 net of the cache"
    assert chart.total_net_dollars == pytest.approx(0.001)


def test_an_empty_window_is_an_empty_chart():
    chart = savings_chart([DayPoint(date(2026, 11, 1), 0, 0.0)])

    assert chart.empty
    assert chart.bars[0].height == 0


def test_daily_savings_is_one_query_and_agrees_with_pinch_summary(
    default_config, db, django_assert_num_queries
):
    seed(
        decision(now=NOW, age=timedelta(hours=1), saved=1000),
        decision(now=NOW, age=timedelta(hours=2), saved=500, chosen_model="gpt-4.1-mini"),
        decision(now=NOW, age=timedelta(days=1, hours=1), saved=2000, chosen_model="gpt-4.1-mini"),
        decision(now=NOW, age=timedelta(days=2), saved=0),
        decision(now=NOW, age=timedelta(days=3), saved=70, chosen_model="retired-model"),
        decision(now=NOW, age=timedelta(days=40), saved=999),
    )
    window = summary_window(default_config, NOW)

    with django_assert_num_queries(1):
        points = daily_savings(window, default_config)

    by_day = {p.day: p for p in points}
    # The first saving is 3 days old: the chart shows a week, ending today.
    assert len(points) == 7 and points[0].day == date(2026, 11, 24)
    assert points[-1].day == date(2026, 11, 30)
    assert by_day[date(2026, 11, 30)].tokens == 1500
    # gpt-4.1 at $2/M and gpt-4.1-mini at $0.40/M (cache rate 0): the blended prompt price.
    assert by_day[date(2026, 11, 30)].dollars == pytest.approx(1000 * 2e-6 + 500 * 0.4e-6)
    assert by_day[date(2026, 11, 29)].dollars == pytest.approx(2000 * 0.4e-6)
    assert by_day[date(2026, 11, 27)] == DayPoint(date(2026, 11, 27), 70, 0.0)  # unpriced
    summary = pinch_summary(default_config, now=NOW)
    assert sum(p.tokens for p in points) == summary["total_tokens_saved"]
    assert round(sum(p.dollars for p in points), 6) == summary["dollars_saved_usd_30d"]


def test_daily_dollars_use_the_assumed_cache_rate(write_default_config, db):
    config = write_default_config({"objective.assumed_cache_rate": 0.5})
    seed(decision(now=NOW, saved=1_000_000))

    points = daily_savings(summary_window(config, NOW), config)

    # gpt-4.1: half at $2.00, half at the cached $0.50 per 1M.
    assert points[-1].dollars == pytest.approx(1.25)


def test_a_month_of_savings_starts_the_chart_at_the_first_saving(default_config, db):
    seed(
        decision(now=NOW, age=timedelta(days=12), saved=100),
        decision(now=NOW, age=timedelta(days=1), saved=200),
    )
    points = daily_savings(summary_window(default_config, NOW), default_config)

    assert [p.day for p in points][:1] == [date(2026, 11, 18)]
    assert len(points) == 13 and points[-1].day == date(2026, 11, 30)
    assert [p.tokens for p in points if p.tokens] == [100, 200]


def test_savings_all_within_two_days_are_charted_by_the_hour(default_config, db):
    seed(
        decision(now=NOW, age=timedelta(minutes=10), saved=300),
        decision(now=NOW, age=timedelta(hours=20, minutes=5), saved=100),
    )
    points = daily_savings(summary_window(default_config, NOW), default_config)

    # From the first saving's hour (NOW - 21 h, 15:00 the day before) to NOW's hour.
    assert points[0].day == datetime(2026, 11, 29, 15, 0, tzinfo=UTC)
    assert points[-1].day == datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert len(points) == 22
    assert (points[0].tokens, points[-1].tokens) == (100, 0)
    assert points[-2].tokens == 300  # 11:50 is in the 11:00 hour
    chart = savings_chart(points)
    assert chart.hourly
    assert chart.bars[0].title.startswith("2026-11-29 15:00: 100 tokens")
    assert {t.label for t in chart.day_labels} >= {"15:00", "Nov 30 00:00"}


def test_one_hour_of_savings_shows_half_a_day_of_hours(default_config, db):
    seed(decision(now=NOW, age=timedelta(minutes=30), saved=500))
    points = daily_savings(summary_window(default_config, NOW), default_config)

    assert len(points) == 12  # not one bar at the right edge of thirty days
    assert points[-1].day == datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert points[-2].tokens == 500
