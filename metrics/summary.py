"""What pinch saved: the figures /metrics, the admin snapshot, the dashboard, the
TUI and ``manage.py pinch_summary`` all show.

The window is the current billing period when ``objective.billing_reset_day``
is set (from the last reset, at midnight in the server's time zone, to now),
otherwise the last ``days`` days. The key names end in ``_30d`` whatever the
window is: they are the contract the dashboard and the TUI read.

Counting, per the contract:

- ``calls_30d`` counts every answered decision in the window, including
  those pinch did not measure (pinch columns NULL: it was off for that
  request), so ``share_pruned`` is the share of the answered traffic pinch
  shrank. A failed call (answered with an error status, or never answered:
  ``routing.summaries.contributions.failed``) is counted apart, in
  ``failed_calls_30d``: an agent retries a failing call again and again, and
  a burst of 429s would otherwise read as pinch pruning less (issue 41).
- A decision is pruned when ``pinch_original_tokens > pinch_final_tokens``;
  only answered pruned rows enter ``pruned_calls_30d``, the tokens saved,
  the median and the dollars.
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

Read from the summary tables (routing/summaries/, docs/summaries.md), so the
cost does not grow with the traffic: the window's hours by chosen model, and
its days' histogram of tokens saved for the median (each saving rounded down
to a round number at most 1 % under it, so the median is at most 1 % low;
whole days). The
window starts at the hour its start falls in. The conversations cheaper and
dearer are counted as they are written (routing/summaries/units.py): a
conversation counts in the window its latest decision falls in, with the net
of its whole life in the log (it used to be the net of its hours inside the
window: the same for every conversation that does not cross the window's
start); a conversation whose net changes sign moves from one count to the other.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.db.models import Q, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from routing.config import RouterConfig
from routing.models import ArmHour, DecisionSummary, RouteDecision, SavedTokens
from routing.periods import billing_period
from routing.pricing import prompt_cost_usd
from routing.summaries.contributions import NO_STATUS, day_of, hour_of
from routing.summaries.units import DOLLAR_DIGITS  # savings a call are fractions of a cent

DEFAULT_DAYS = 30  # the window the contract's ``_30d`` keys are named after
SHARE_DIGITS = 4  # share_pruned: 0.1234 is 12.34 %, enough for a percent with two decimals
# contributions.failed on a summary row (NO_STATUS: none recorded).
FAILED = Q(status_code=NO_STATUS) | Q(status_code__gte=400)


@dataclass(frozen=True)
class Window:
    """The span the aggregates cover: ``start <= created_at <= end``."""

    start: datetime
    end: datetime
    reset_date: date | None = None
    next_reset_date: date | None = None

    def decisions(self):
        return RouteDecision.objects.since(self.start).filter(created_at__lte=self.end)

    def summaries(self, table=DecisionSummary):
        """The window's rows of an hourly summary table: from the hour ``start`` falls in."""
        return table.objects.filter(hour__gte=hour_of(self.start), hour__lte=self.end)

    def saved_days(self):
        """The window's histogram rows of tokens saved: from the day ``start`` falls in."""
        return SavedTokens.objects.filter(day__gte=day_of(self.start), day__lte=self.end)


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


def model_rows(window: Window):
    """``(chosen_model, answered, pruned answered, their tokens saved, net USD, billed,
    failed)`` per model."""
    answered = ~FAILED
    return (
        window.summaries()
        .values_list("chosen_model")
        .annotate(
            n=Coalesce(Sum("decisions", filter=answered), 0),
            pruned=Coalesce(Sum("pruned", filter=answered), 0),
            saved=Coalesce(Sum("tokens_saved", filter=answered), 0),
            net=Sum("net_usd"),
            billed=Sum("billed"),
            failed=Coalesce(Sum("decisions", filter=FAILED), 0),
        )
        .order_by("chosen_model")
    )


def saved_histogram(window: Window) -> Counter:
    """{tokens saved (a bucket's value): pruned decisions} over the window's days."""
    rows = window.saved_days().values_list("bucket").annotate(n=Sum("decisions")).order_by()
    return Counter(dict(rows))


def net_saving_usd(by_model: Iterable[tuple]) -> float:
    """Pinch's saving net of the cache (from ``model_rows``), as every surface shows it: the
    card's ``net_dollars_saved_usd_30d`` and savings by cause's ``pinch_usd_30d`` alike.

    Each row's net was priced when it was written, so a model no longer configured
    still counts. Sorted by model (model_rows), so the float sum runs in one order.
    """
    return round(sum(row[4] for row in by_model), DOLLAR_DIGITS)


def net_figures(by_model: list[tuple], window: Window) -> dict:
    """The net saving and the billed calls (from ``model_rows``), and the conversations pinch
    made cheaper or dearer (each conversation's own net: ``ArmHour``, routing/summaries/units)."""
    counted = window.summaries(ArmHour).aggregate(cheaper=Sum("cheaper"), dearer=Sum("dearer"))
    return {
        "net_dollars_saved_usd_30d": net_saving_usd(by_model),
        "billed_calls_30d": sum(row[5] for row in by_model),
        "conversations_cheaper_30d": int(counted["cheaper"] or 0),
        "conversations_dearer_30d": int(counted["dearer"] or 0),
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


def summary_from_rows(
    by_model: Iterable[tuple], saved_counts: Counter, config: RouterConfig
) -> dict:
    """The pinch figures from ``model_rows``' tuples and ``saved_histogram``. Pure: no database."""
    calls = failed = 0
    saved_by_model = Counter()
    pruned_by_model = Counter()
    for model_id, count, pruned, saved, _net, _billed, failed_calls in by_model:
        calls += count
        failed += failed_calls
        if pruned:
            saved_by_model[model_id] += saved
            pruned_by_model[model_id] += pruned

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
        "failed_calls_30d": failed,
    }


def pinch_summary(config: RouterConfig, now: datetime | None = None, days: int = DEFAULT_DAYS):
    """The pinch aggregate over the window, or None when pinch is disabled (three queries)."""
    if not config.pinch.enabled:
        return None
    window = summary_window(config, now, days)
    by_model = list(model_rows(window))
    summary = summary_from_rows(by_model, saved_histogram(window), config)
    summary.update(net_figures(by_model, window))
    if window.reset_date is not None:
        summary["reset_date"] = window.reset_date.isoformat()
        summary["next_reset_date"] = window.next_reset_date.isoformat()
    return summary
