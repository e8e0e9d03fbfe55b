"""What the dashboard page shows: the Pinch savings card, savings per day, recent decisions.

The card leads with the net saving after the prompt cache, coloured by its
sign, and the conversations pinch made dearer beside those it made cheaper;
gross figures follow. Other features' sections go in the card's slots
(``metrics.card_slots``). The chart's legend prints the card's own figures,
so the two never disagree in a digit.

The page reads a fixed number of queries whatever the traffic (a test holds it
to that): the pinch summary (``metrics.summary``), the savings per day and
chosen model (one grouped query on the summary tables, below), the newest
decisions (one query, with their API key joined in) and the agent sessions
(three queries, ``routing.agent_sessions``).

Savings per day cover the same window as the card (``summary_window``) and are
priced the same way: each day's saved tokens at the blended prompt rate of the
model that row went to (``routing.pricing``); a model no longer configured adds
$0, as in ``pinch_summary``. The chart starts at the first saving in the window
(a week at least), so a router that ran for two days is not one bar at the
right edge of thirty; when every saving is younger than ``HOURLY_SPAN`` it is
drawn by the hour.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.db.models import Sum
from django.utils import timezone

from metrics.cache_forecast import forecast_context
from metrics.card_slots import filled_slots
from metrics.charts import DayPoint, savings_chart
from metrics.key_budgets import cells, key_budget_rows
from metrics.quality_card import quality_context
from metrics.savings import savings_context
from metrics.summary import DEFAULT_DAYS, FAILED, Window, pinch_summary, summary_window
from routing.agent_sessions import SESSIONS_SHOWN, agent_sessions
from routing.config import RouterConfig
from routing.formatting import format_days, money_tone, pinch_card
from routing.knobs import knob_values
from routing.models import RECENT_DECISIONS, RouteDecision
from routing.pricing import prompt_cost_usd

HOURLY_SPAN = timedelta(hours=48)  # savings all younger than this are charted by the hour
MIN_DAYS = 7  # a daily chart shows a week at least, so one day is not one fat bar
MIN_HOURS = 12  # likewise for an hourly chart
HOUR = timedelta(hours=1)


def _hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def daily_savings(window: Window, config: RouterConfig) -> list[DayPoint]:
    """Tokens, gross and net dollars saved per day (or hour) over ``window``, zeros included.

    One query on the hourly summaries, grouped by hour and chosen model; days are
    summed from hours here.
    """
    rows = (
        window.summaries()
        .filter(pruned__gt=0)
        .exclude(FAILED)  # as on the card: the answered calls
        .values("hour", "chosen_model")
        .annotate(saved=Sum("tokens_saved"), net=Sum("pruned_net_usd"))
        .order_by("hour", "chosen_model")
    )
    cache_rate = config.objective.assumed_cache_rate
    saved = []  # (hour, tokens, dollars, net dollars)
    for row in rows:
        model = config.model(row["chosen_model"])
        dollars = prompt_cost_usd(model, row["saved"], cache_rate) if model is not None else 0.0
        # Only pruned rows: a request sent whole saves 0 net by definition.
        saved.append((row["hour"], row["saved"], dollars, row["net"] or 0.0))

    end_hour = _hour_of(window.end)
    first_hour = saved[0][0] if saved else None
    if first_hour is not None and first_hour > window.end - HOURLY_SPAN:
        start = min(first_hour, end_hour - (MIN_HOURS - 1) * HOUR)
        start = max(start, _hour_of(window.start))
        buckets = [start + timedelta(hours=i) for i in range(int((end_hour - start) / HOUR) + 1)]

        def bucket(hour):
            return hour
    else:
        first = timezone.localdate(window.start)
        last = timezone.localdate(window.end)
        if first_hour is not None:
            first = max(first, min(timezone.localdate(first_hour), last - timedelta(MIN_DAYS - 1)))
        buckets = [first + timedelta(days=i) for i in range((last - first).days + 1)]

        zone = timezone.get_current_timezone()

        def bucket(hour):
            # The zone looked up once: timezone.localdate looks it up per call, and a month of
            # hours by model is thousands of rows.
            return hour.astimezone(zone).date()

    tokens = defaultdict(int)
    dollars = defaultdict(float)
    net = defaultdict(float)
    for hour, hour_tokens, hour_dollars, hour_net in saved:
        key = bucket(hour)
        tokens[key] += hour_tokens
        dollars[key] += hour_dollars
        net[key] += hour_net
    return [DayPoint(b, tokens[b], dollars[b], net[b]) for b in buckets]


def dashboard_context(
    config: RouterConfig,
    now: datetime | None = None,
    days: int = DEFAULT_DAYS,
    show_decisions: bool = True,
    sessions_dearest_first: bool = False,
) -> dict:
    """The page's figures; the recent decisions only for who may see them (``show_decisions``);
    the agent sessions newest first, or those pinch made dearer first."""
    window = summary_window(config, now, days)
    summary = pinch_summary(config, now=window.end, days=days)
    return {
        "summary": summary,
        "card": pinch_card(summary),
        # The net figure's colour; gross savings cannot be negative and are not coloured.
        "net_tone": money_tone(summary["net_dollars_saved_usd_30d"]) if summary else "even",
        "dearer_tone": "loss" if summary and summary["conversations_dearer_30d"] else "even",
        "card_slots": filled_slots(config, window),
        "window": window,
        "window_days": days,
        "window_text": format_days(days),
        "chart": savings_chart(daily_savings(window, config)),
        "decisions": list(RouteDecision.objects.select_related("api_key").recent())
        if show_decisions
        else [],
        "decisions_visible": show_decisions,
        "recent_limit": RECENT_DECISIONS,
        "knobs": knob_values(config),
        "savings_by_cause": savings_context(config, window),
        # Key names and their spend are tenant data, shown like the decisions.
        "key_budgets": [cells(row) for row in key_budget_rows(config, window.end)]
        if show_decisions
        else [],
        "sessions": agent_sessions(
            SESSIONS_SHOWN, since=window.start, dearest_first=sessions_dearest_first
        )
        if show_decisions
        else [],
        "sessions_shown": SESSIONS_SHOWN,
        "sessions_dearest_first": sessions_dearest_first,
        **quality_context(config, window.end, days),
        "cache_forecast": forecast_context(window) if summary is not None else None,
    }
