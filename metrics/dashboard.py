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

from django.db.models import Count, F, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from metrics.charts import DayPoint, savings_chart
from metrics.summary import DEFAULT_DAYS, Window, pinch_summary, summary_window
from routing.config import RouterConfig
from routing.models import RouteDecision
from routing.pricing import prompt_cost_usd

RECENT_DECISIONS = 50  # rows in the page's table: the last few minutes of an agent session


def daily_savings(window: Window, config: RouterConfig) -> list[DayPoint]:
    """Tokens and dollars saved per day over ``window``, every day present (zeros included)."""
    rows = (
        window.decisions()
        .filter(pinch_original_tokens__gt=F("pinch_final_tokens"))
        .annotate(day=TruncDate("created_at"))
        .values("day", "chosen_model")
        .annotate(
            saved=Sum(F("pinch_original_tokens") - F("pinch_final_tokens")), calls=Count("id")
        )
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


def recent_decisions(limit: int = RECENT_DECISIONS) -> list[RouteDecision]:
    return list(
        RouteDecision.objects.select_related("api_key").order_by("-created_at", "-id")[:limit]
    )


def _count(value) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def pinch_card(summary: dict | None) -> dict | None:
    """The card's figures as displayed (None when pinch is disabled)."""
    if summary is None:
        return None
    return {
        "share_pruned": f"{summary['share_pruned'] * 100:.2f}%",
        "total_tokens_saved": _count(summary["total_tokens_saved"]),
        "median_tokens_saved": _count(summary["median_tokens_saved"]),
        "dollars_saved_usd_30d": f"${summary['dollars_saved_usd_30d']:.6f}",
        "calls_30d": _count(summary["calls_30d"]),
        "pruned_calls_30d": _count(summary["pruned_calls_30d"]),
    }


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
        "decisions": recent_decisions(),
        "recent_limit": RECENT_DECISIONS,
        "knobs": {
            "pinch_enabled": config.pinch.enabled,
            "pinch_relevance_enabled": config.pinch.relevance.enabled,
            "pinch_prefix_probe": config.pinch.prefix_probe,
        },
    }
