"""The JSON body of ``GET /metrics``: pinch, quality, request totals, savings by cause.

All cover the same window as ``pinch_summary`` (see ``metrics.summary``), so
``requests.total`` counts the decisions ``pinch.calls_30d`` (answered) and
``pinch.failed_calls_30d`` count between them.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.db.models import Sum

from metrics.cache_forecast import cache_forecast
from metrics.quality import quality_summary
from metrics.savings import savings_by_cause
from metrics.summary import DEFAULT_DAYS, Window, pinch_summary, summary_window
from routing.config import RouterConfig
from routing.recording.health import available as recording_available
from routing.summaries.contributions import NO_STATUS

UNKNOWN_STATUS = "unknown"  # a decision recorded before its answer was (status_code NULL)


def status_label(status_code: int) -> str:
    """A summary row's status as the surfaces name it."""
    return UNKNOWN_STATUS if status_code == NO_STATUS else str(status_code)


def request_totals(window: Window) -> dict:
    """Decisions in the window by path and by status code (one grouped query, summaries)."""
    by_path = Counter()
    by_status = Counter()
    rows = (
        window.summaries()
        .values_list("path", "status_code")
        .annotate(n=Sum("decisions"))
        .order_by()
    )
    for path, status_code, count in rows:
        by_path[path] += count
        by_status[status_label(status_code)] += count
    return {
        "since": window.start.isoformat(),
        "total": sum(by_path.values()),
        "by_path": dict(sorted(by_path.items())),
        "by_status": dict(sorted(by_status.items())),
    }


def metrics_report(config: RouterConfig, now: datetime | None = None, days: int = DEFAULT_DAYS):
    """``{"pinch", "cache_forecast", "quality", "requests", "savings_by_cause"}``.

    No pinch blocks when pinch is off. The quality block (metrics.quality) is
    there either way: a routing experiment's arms compare with pinch off too.
    """
    window = summary_window(config, now, days)
    report = {}
    summary = pinch_summary(config, now=window.end, days=days)
    if summary is not None:
        report["pinch"] = summary
        report["cache_forecast"] = cache_forecast(window)
    report["quality"] = quality_summary(config, now=window.end, days=days)
    report["requests"] = request_totals(window)
    report["savings_by_cause"] = savings_by_cause(config, now=window.end, days=days)
    report["recording_available"] = recording_available()
    return report
