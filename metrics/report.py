"""The JSON body of ``GET /metrics``: the pinch block and request totals.

Both cover the same window as ``pinch_summary`` (see ``metrics.summary``), so
``requests.total`` and ``pinch.calls_30d`` count the same decisions.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.db.models import Count

from metrics.summary import DEFAULT_DAYS, Window, pinch_summary, summary_window
from routing.config import RouterConfig
from routing.recording.health import available as recording_available

UNKNOWN_STATUS = "unknown"  # a decision recorded before its answer was (status_code NULL)


def request_totals(window: Window) -> dict:
    """Decisions in the window by path and by status code (one grouped query)."""
    by_path = Counter()
    by_status = Counter()
    rows = window.decisions().values_list("path", "status_code").annotate(n=Count("id")).order_by()
    for path, status_code, count in rows:
        by_path[path] += count
        by_status[UNKNOWN_STATUS if status_code is None else str(status_code)] += count
    return {
        "since": window.start.isoformat(),
        "total": sum(by_path.values()),
        "by_path": dict(sorted(by_path.items())),
        "by_status": dict(sorted(by_status.items())),
    }


def metrics_report(config: RouterConfig, now: datetime | None = None, days: int = DEFAULT_DAYS):
    """``{"pinch": ..., "requests": ...}``; the pinch block is left out when pinch is off."""
    window = summary_window(config, now, days)
    report = {}
    summary = pinch_summary(config, now=window.end, days=days)
    if summary is not None:
        report["pinch"] = summary
    report["requests"] = request_totals(window)
    report["recording_available"] = recording_available()
    return report
