"""A key's spend in its budget period, against its soft and hard budgets.

The spend is what the key's decisions cost: the prompt as the provider
billed it, net of the cache (``billed_prompt_cost_usd``), or the router's
estimate (``estimated_cost_usd``) for a request whose usage has not arrived
or never came; plus the completion tokens at the chosen model's completion
price. One grouped query per period sums it from the key's hourly spend
(``KeySpend``, routing/summaries/: added to as each decision is recorded, so a
check reads at most a row per hour and model of the period, never the key's
decisions), and the request path re-sums a key at most every
``limits.spend_refresh_seconds`` per process, for the soft budget's warning
and the refusal before planning; the hard budget itself is reserved per
request from the ledger (routing/limits/ledger.py). A database that
cannot be read leaves the key on its last known spend (or unchecked), logged:
the budget is not worth failing requests for.

Periods start at midnight in the router's time zone (whole hours from UTC,
like the summaries' hours): a day, a week from
Monday, or a month from ``objective.billing_reset_day`` (the 1st when unset),
the same billing period ``pinch_summary`` reports.
"""

from __future__ import annotations

import logging
import threading
import time as clock
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.db import Error as DatabaseFailure
from django.db.models import Sum
from django.utils import timezone

from routing.config import RouterConfig
from routing.models import PERIOD_DAY, PERIOD_WEEK, ApiKey, KeySpend
from routing.periods import billing_period
from routing.pricing import PER_TOKENS

log = logging.getLogger("router.limits")


@dataclass(frozen=True)
class Period:
    start: datetime
    resets_at: datetime


@dataclass(frozen=True)
class BudgetState:
    """Where a key stands against its budgets now."""

    period: str
    spent_usd: float
    budget_usd: float | None
    soft_budget_usd: float | None
    resets_at: datetime

    @property
    def exhausted(self) -> bool:
        return self.budget_usd is not None and self.spent_usd >= self.budget_usd

    @property
    def past_soft(self) -> bool:
        return self.soft_budget_usd is not None and self.spent_usd >= self.soft_budget_usd

    @property
    def share_used(self) -> float | None:
        """Spent over the hard budget (else the soft one), 0 to 1+; None without a budget."""
        limit = self.budget_usd if self.budget_usd is not None else self.soft_budget_usd
        return None if not limit else self.spent_usd / limit


def has_budget(key: ApiKey) -> bool:
    return key.budget_usd is not None or key.soft_budget_usd is not None


def _midnight(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


# The period each (period, reset day, time zone) was last asked for: the next request's
# ``now`` almost always falls in it too, and finding it anew (the local date, its
# midnights made aware) took ~15 us of every budgeted request. Periods of one kind tile
# time, so the one holding ``now`` is the only one that can.
_periods: dict[tuple, Period] = {}


def budget_period(period: str, config: RouterConfig, now: datetime) -> Period:
    """The period ``now`` falls in: its first instant and the instant it resets."""
    reset_day = config.objective.billing_reset_day or 1
    asked = (period, reset_day, timezone.get_current_timezone())
    last = _periods.get(asked)
    if last is not None and last.start <= now < last.resets_at:
        return last
    found = _periods[asked] = _period_of(period, reset_day, now)
    return found


def _period_of(period: str, reset_day: int, now: datetime) -> Period:
    today = timezone.localdate(now)
    if period == PERIOD_DAY:
        return Period(_midnight(today), _midnight(today + timedelta(days=1)))
    if period == PERIOD_WEEK:
        monday = today - timedelta(days=today.weekday())
        return Period(_midnight(monday), _midnight(monday + timedelta(days=7)))
    start, end = billing_period(reset_day, today)
    return Period(_midnight(start), _midnight(end))


def spend_by_key(keys, config: RouterConfig, now: datetime | None = None) -> dict[int, BudgetState]:
    """Each key's BudgetState: one grouped query per distinct period among ``keys``."""
    now = now or timezone.now()
    by_period = defaultdict(list)
    for key in keys:
        by_period[key.budget_period].append(key)
    states = {}
    for period_name, members in by_period.items():
        period = budget_period(period_name, config, now)
        spent = _spent(config, [k.pk for k in members], period.start)
        for key in members:
            states[key.pk] = BudgetState(
                period_name,
                spent.get(key.pk, 0.0),
                key.budget_usd,
                key.soft_budget_usd,
                period.resets_at,
            )
    return states


def _spent(config: RouterConfig, key_ids: list[int], start: datetime) -> dict[int, float]:
    rows = (
        KeySpend.objects.filter(api_key_id__in=key_ids, hour__gte=start)
        .values_list("api_key_id", "chosen_model")
        .annotate(prompt=Sum("prompt_usd"), completion=Sum("completion_tokens"))
        .order_by()
    )
    spent: dict[int, float] = defaultdict(float)
    for key_id, model_id, prompt, completion in rows:
        spent[key_id] += spend_usd(prompt, completion, config.model(model_id))
    return spent


def spend_usd(prompt_usd: float | None, completion_tokens: int | None, model) -> float:
    """What a request (or an hour's sum) counts against a budget: its prompt as billed, else
    as estimated, and its completion at ``model``'s completion price (none unknown)."""
    price = model.completion_price if model is not None else 0.0
    return (prompt_usd or 0.0) + (completion_tokens or 0) * price / PER_TOKENS


class SpendCache:
    """Each key's BudgetState, re-summed at most every ``limits.spend_refresh_seconds``."""

    def __init__(self):
        self._lock = threading.Lock()
        self._states: dict[int, tuple[float, BudgetState]] = {}

    def state(self, key: ApiKey, config: RouterConfig) -> BudgetState | None:
        """The key's state; the last one known (or None) while the database cannot be read."""
        now = clock.monotonic()
        cached = self._states.get(key.pk)
        fresh_for = config.limits.spend_refresh_seconds
        if cached is not None and now - cached[0] < fresh_for:
            state = cached[1]
            if timezone.now() < state.resets_at and _same_limits(state, key):
                return state
        try:
            state = spend_by_key([key], config)[key.pk]
        except DatabaseFailure as error:
            # The decision write spools meanwhile (routing/recording/spool.py): admitting
            # on the last known spend beats refusing every request of a key for an outage.
            log.warning("budget_unchecked key=%s: %s", key.pk, type(error).__name__)
            return cached[1] if cached is not None else None
        with self._lock:
            self._states[key.pk] = (now, state)
        return state

    def forget(self) -> None:
        with self._lock:
            self._states.clear()


def _same_limits(state: BudgetState, key: ApiKey) -> bool:
    return (state.period, state.budget_usd, state.soft_budget_usd) == (
        key.budget_period,
        key.budget_usd,
        key.soft_budget_usd,
    )


spend_cache = SpendCache()
