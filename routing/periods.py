"""The monthly billing period: below both apps, so budgets (routing) and the figures (metrics)
count the same month without routing importing metrics."""

from __future__ import annotations

import calendar
from datetime import date


def _reset_in_month(year: int, month: int, reset_day: int) -> date:
    # A reset day past the month's end resets on its last day (31 -> Apr 30, Feb 28/29).
    return date(year, month, min(reset_day, calendar.monthrange(year, month)[1]))


def _next_month(year: int, month: int) -> tuple[int, int]:
    return (year + 1, 1) if month == 12 else (year, month + 1)


def _previous_month(year: int, month: int) -> tuple[int, int]:
    return (year - 1, 12) if month == 1 else (year, month - 1)


def billing_period(reset_day: int, today: date) -> tuple[date, date]:
    """(last reset on or before ``today``, next reset after it) for a monthly reset day."""
    this_month = _reset_in_month(today.year, today.month, reset_day)
    if this_month <= today:
        return this_month, _reset_in_month(*_next_month(today.year, today.month), reset_day)
    return _reset_in_month(*_previous_month(today.year, today.month), reset_day), this_month
