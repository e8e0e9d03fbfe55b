"""What the dashboard page shows: the Pinch savings card, savings per day, recent decisions.

The page reads a fixed number of queries whatever the traffic (a test holds it
to that): the pinch summary (one grouped query, ``metrics.summary``), the
savings per day and chosen model (one grouped query, below) and the newest
decisions (one query, with their API key joined in).

Savings per day cover the same window as the card (``summary_window``) and are
priced the same way: each day's saved tokens at the blended prompt rate of the
model that row went to (``routing.pricing``); a model no longer configured adds
$0, as in ``pinch_summary``.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.db.models import Count, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from metrics.charts import DayPoint, savings_chart
from metrics.formatting import pinch_card
from metrics.summary import DEFAULT_DAYS, Window, pinch_summary, summary_window
from routing.config import RouterConfig
from routing.knobs import knob_values
from routing.models import RECENT_DECISIONS, TOKENS_SAVED, RouteDecision
from routing.pricing import prompt_cost_usd


def daily_savings(window: Window, config: RouterConfig) -> list[DayPoint]:
    """Tokens and dollars saved per day over ``window``, every day present (zeros included)."""
    rows = (
        window.decisions()
        .pruned()
        .annotate(day=TruncDate("created_at"))
        .values("day", "chosen_model")
        .annotate(saved=Sum(TOKENS_SAVED), calls=Count("id"))
        # An explicit order replaces Meta.ordering, which would add created_at to the GROUP BY.
        .order_by("day", "chosen_model")
    )
    cache_rate = config.objective.assumed_cache_rate
    tokens = defaultdict(int)
    dollars = defaultdict(float)
    for row in rows:
        tokens[row["day"]] += row["saved"]
        model = config.model(row["chosen_model"])
        if model is not None:
            dollars[row["day"]] += prompt_cost_usd(model, row["saved"], cache_rate)

    first = timezone.localdate(window.start)
    last = timezone.localdate(window.end)
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    return [DayPoint(day, tokens[day], dollars[day]) for day in days]


def dashboard_context(
    config: RouterConfig, now: datetime | None = None, days: int = DEFAULT_DAYS
) -> dict:
    window = summary_window(config, now, days)
    summary = pinch_summary(config, now=window.end, days=days)
    return {
        "summary": summary,
        "card": pinch_card(summary),
        "window": window,
        "window_days": days,
        "chart": savings_chart(daily_savings(window, config)),
        "decisions": list(RouteDecision.objects.select_related("api_key").recent()),
        "recent_limit": RECENT_DECISIONS,
        "knobs": knob_values(config),
    }
