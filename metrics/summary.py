"""What pinch saved: the figures /metrics, the admin snapshot, the dashboard, the
TUI and ``manage.py pinch_summary`` all show.

The window is the current billing period when ``objective.billing_reset_day``
is set (from the last reset, at midnight in the server's time zone, to now),
otherwise the last ``days`` days. The key names end in ``_30d`` whatever the
window is: they are the contract the dashboard and the TUI read.

Counting, per the contract:

- ``calls_30d`` counts every decision in the window, including those pinch did
  not measure (pinch columns NULL: it was off for that request), so
  ``share_pruned`` is the share of all traffic pinch shrank.
- A decision is pruned when ``pinch_original_tokens > pinch_final_tokens``;
  only pruned rows enter the median and the dollars.
- Dollars price each pruned row's saved tokens at the blended prompt rate of
  the model that row went to (``routing.pricing``, the formula routing ranks
  candidates by). A row whose model is no longer configured cannot be priced:
  its tokens still count, it adds $0, and ``unpriced_calls_30d`` says how many
  such rows there are, so a dollar figure that looks low can be explained.

Net of the cache (``net_dollars_saved_usd_30d``): per decision, the
estimated cost of the same request unpruned minus the prompt cost the
provider's reported usage (cache reads and writes) comes to, under the
model's prices (``billed_prompt_cost_usd``, and
``routing.dispatch.Outcome.unpruned_cost_usd``). Only rows
with reported usage count (``billed_calls_30d``); a request pinch sent whole
saves exactly 0. ``conversations_cheaper_30d`` and ``conversations_dearer_30d``
count the conversations whose net saving is above or below zero: the gross
figure cannot go negative, the net one can, and that is what it is for.

One grouped query reads the window: rows per (chosen model, tokens saved,
conversation), with the net saving summed per group. Python does the
arithmetic on those integers, so SQLite and PostgreSQL give the same numbers
(no database median), and what crosses the wire grows with the number of
distinct savings and conversations, not with traffic; net sums are rounded
per conversation to 6 decimals.
"""

from __future__ import annotations

import calendar
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.db.models import Count, Sum
from django.utils import timezone

from routing.config import RouterConfig
from routing.models import NET_SAVED, RouteDecision
from routing.pricing import prompt_cost_usd

DEFAULT_DAYS = 30  # the window the contract's ``_30d`` keys are named after
SHARE_DIGITS = 4  # share_pruned: 0.1234 is 12.34 %, enough for a percent with two decimals
DOLLAR_DIGITS = 6  # dollars: savings per call are often fractions of a cent


@dataclass(frozen=True)
class Window:
    """The span the aggregates cover: ``start <= created_at <= end``."""

    start: datetime
    end: datetime
    reset_date: date | None = None
    next_reset_date: date | None = None

    def decisions(self):
        return RouteDecision.objects.since(self.start).filter(created_at__lte=self.end)


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


def summary_window(config: RouterConfig, now: datetime | None = None, days: int = DEFAULT_DAYS):
    """The window for ``config``: the billing period when a reset day is set, else ``days``."""
    if days < 1:
        raise ValueError(f"days must be at least 1, got {days}")
    now = now or timezone.now()
    reset_day = config.objective.billing_reset_day
    if reset_day is None:
        return Window(start=now - timedelta(days=days), end=now)
    reset_date, next_reset_date = billing_period(reset_day, timezone.localdate(now))
    start = timezone.make_aware(datetime.combine(reset_date, time.min))
    return Window(start, now, reset_date, next_reset_date)


def saved_token_rows(window: Window):
    """``(chosen_model, tokens_saved or None, conversation, rows, net USD, billed rows)``.

    One grouped query for every pinch figure: the net saving (NULL unless the
    row has both costs) is summed per group, and ``billed`` counts the rows
    that have it.
    """
    return (
        window.decisions()
        .with_tokens_saved()
        .values_list("chosen_model", "tokens_saved", "conversation")
        .annotate(decisions=Count("id"), net=Sum(NET_SAVED), billed=Count(NET_SAVED))
        .order_by()
    )


def net_from_rows(rows: Iterable[tuple[str, float | None, int]]) -> dict:
    """The net figures from ``(conversation, net saved USD, billed rows)`` triples. Pure."""
    by_conversation: dict[str, float] = {}
    billed = 0
    for conversation, saved, count in rows:
        billed += count
        if count:
            by_conversation[conversation] = by_conversation.get(conversation, 0.0) + (saved or 0.0)
    net = 0.0
    cheaper = dearer = 0
    # Sorted, so the float sum runs in the same order whatever order the rows came in.
    for conversation in sorted(by_conversation):
        saved = round(by_conversation[conversation], DOLLAR_DIGITS)
        net += saved
        # A blank conversation is pinch-off traffic, which saves 0 by definition.
        if conversation and saved > 0:
            cheaper += 1
        elif conversation and saved < 0:
            dearer += 1
    return {
        "net_dollars_saved_usd_30d": round(net, DOLLAR_DIGITS),
        "billed_calls_30d": billed,
        "conversations_cheaper_30d": cheaper,
        "conversations_dearer_30d": dearer,
    }


def _median(counts: Counter) -> float:
    """Exact median of a multiset given as {value: how many}; mean of the middle two if even."""
    total = sum(counts.values())
    if total == 0:
        return 0.0
    low_index, high_index = (total - 1) // 2, total // 2
    low = None
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if low is None and seen > low_index:
            low = value
        if seen > high_index:
            return (low + value) / 2
    raise AssertionError("unreachable: the counts add up to total")


def summary_from_rows(rows: Iterable[tuple[str, int | None, int]], config: RouterConfig) -> dict:
    """The pinch figures from ``(chosen_model, tokens_saved or None, rows)`` triples.

    Pure: no database. ``tokens_saved`` is original minus final tokens (None when
    pinch did not measure the request); a triple stands for ``rows`` decisions.
    """
    calls = 0
    saved_counts = Counter()  # tokens saved -> pruned decisions, for the median
    saved_by_model = Counter()
    pruned_by_model = Counter()
    for model_id, saved, count in rows:
        calls += count
        if saved is None or saved <= 0:
            continue
        saved_counts[saved] += count
        saved_by_model[model_id] += saved * count
        pruned_by_model[model_id] += count

    cache_rate = config.objective.assumed_cache_rate
    dollars = 0.0
    unpriced = 0
    # Sorted, so the float sum runs in the same order whatever order the rows came in.
    for model_id in sorted(saved_by_model):
        model = config.model(model_id)
        if model is None:
            # A blank model never ran (nothing answered): not a retired model to explain.
            unpriced += pruned_by_model[model_id] if model_id else 0
            continue
        dollars += prompt_cost_usd(model, saved_by_model[model_id], cache_rate)

    pruned = sum(pruned_by_model.values())
    return {
        "calls_30d": calls,
        "pruned_calls_30d": pruned,
        "share_pruned": round(pruned / calls, SHARE_DIGITS) if calls else 0.0,
        "total_tokens_saved": sum(saved_by_model.values()),
        "median_tokens_saved": _median(saved_counts),
        "dollars_saved_usd_30d": round(dollars, DOLLAR_DIGITS),
        "unpriced_calls_30d": unpriced,
    }


def pinch_summary(config: RouterConfig, now: datetime | None = None, days: int = DEFAULT_DAYS):
    """The pinch aggregate over the window, or None when pinch is disabled (one query)."""
    if not config.pinch.enabled:
        return None
    window = summary_window(config, now, days)
    rows = list(saved_token_rows(window))
    summary = summary_from_rows([(model, saved, n) for model, saved, _, n, _, _ in rows], config)
    summary.update(net_from_rows([(conv, net, billed) for _, _, conv, _, net, billed in rows]))
    if window.reset_date is not None:
        summary["reset_date"] = window.reset_date.isoformat()
        summary["next_reset_date"] = window.next_reset_date.isoformat()
    return summary
