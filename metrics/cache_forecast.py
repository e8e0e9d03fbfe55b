"""Predicted against billed, over the summary window: the cache surprises and their reasons.

The per-decision verdict is ``routing.cache_forecast``; this counts them for
/metrics, the dashboard (``templates/metrics/_cache_forecast.html``) and
``manage.py pinch_summary``, over the same window as the pinch card
(``metrics.summary.summary_window``). One grouped query on the summary tables
(routing/summaries/): the compared decisions by the provider's miss reason,
with the predicted and billed cache reads summed, so the share of the prompt
the router expected read stands beside the share the provider billed read;
and one on the arms' hours for the conversations with a surprise (each once, in
the window its latest decision falls in: routing/summaries/units.py).
"""

from __future__ import annotations

from django.db.models import Sum

from metrics.summary import Window
from routing.models import ArmHour

SHARE_DIGITS = 4


def cache_forecast(window: Window) -> dict:
    """The window's predicted-against-billed figures (keys end in ``_30d`` like the card's)."""
    rows = (
        window.summaries()
        .filter(forecast_compared__gt=0)
        .values_list("cache_miss_reason")
        .annotate(
            decisions=Sum("forecast_compared"),
            misses=Sum("cache_misses"),
            hits=Sum("cache_hits"),
            predicted_read=Sum("predicted_read"),
            predicted_total=Sum("predicted_total"),
            billed_read=Sum("billed_read"),
            billed_total=Sum("billed_total"),
        )
        .order_by()
    )
    # Each conversation once, in the window of its latest decision (routing/summaries/units.py).
    surprised = window.summaries(ArmHour).aggregate(n=Sum("surprised"))["n"] or 0
    return forecast_from_rows(list(rows), int(surprised))


def forecast_context(window: Window) -> dict:
    """The dashboard include's context (``_cache_forecast.html``): the figures, formatted once."""
    figures = cache_forecast(window)
    return {
        "figures": figures,
        "predicted_read": _percent(figures["predicted_read_share_30d"]),
        "billed_read": _percent(figures["billed_read_share_30d"]),
    }


def forecast_text(figures: dict) -> str:
    """The terminal lines of ``manage.py pinch_summary``."""
    reasons = ", ".join(f"{k} {v:,}" for k, v in figures["cache_miss_reasons_30d"].items())
    return "\n".join(
        [
            f"  cache forecast {figures['forecast_calls_30d']:,} calls compared: "
            f"{_percent(figures['predicted_read_share_30d'])} of the prompt predicted read, "
            f"{_percent(figures['billed_read_share_30d'])} billed read",
            f"  surprises      {figures['cache_misses_30d']:,} missed (predicted warm, billed "
            f"as written), {figures['cache_unexpected_hits_30d']:,} unexpected hits, in "
            f"{figures['conversations_surprised_30d']:,} conversations"
            + (f"; provider's reasons: {reasons}" if reasons else ""),
        ]
    )


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share * 100:.1f}%"


def forecast_from_rows(rows, conversations_surprised: int) -> dict:
    """The figures from (reason, n, misses, hits, predicted read and total, billed read and
    total) rows, and the count of conversations with a surprise."""
    compared = predicted_read = predicted_total = billed_read = billed_total = 0
    misses = hits = 0
    reasons: dict[str, int] = {}
    for reason, n, miss, hit, p_read, p_total, b_read, b_total in rows:
        compared += n
        misses += miss
        hits += hit
        predicted_read += p_read
        predicted_total += p_total
        billed_read += b_read
        billed_total += b_total
        if reason:
            reasons[reason] = reasons.get(reason, 0) + n
    return {
        "forecast_calls_30d": compared,
        "cache_misses_30d": misses,
        "cache_unexpected_hits_30d": hits,
        "conversations_surprised_30d": conversations_surprised,
        "predicted_read_share_30d": _share(predicted_read, predicted_total),
        "billed_read_share_30d": _share(billed_read, billed_total),
        "cache_miss_reasons_30d": dict(sorted(reasons.items())),
    }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, SHARE_DIGITS) if whole else None
