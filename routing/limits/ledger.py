"""Hard budgets that hold across workers and instances: a request's worst case is reserved
before its upstream call and settled when its row is written.

Comparing a cached spend with the budget let every request in flight, and
every request of the next ``spend_refresh_seconds``, through the same check:
a $5 budget at $1 a request spent $93 from one client in sequence, $585
from 16 threads and $227 across two instances (issue 43). So a key's hard
budget is a ledger row per period (``BudgetLedger``) that every worker and
instance reserves from with one conditional UPDATE::

    UPDATE ledger SET reserved = reserved + cost
     WHERE id = %s AND settled <= budget - cost - reserved

and the row count says whether the request fits (PostgreSQL re-checks the
WHERE on a row a concurrent reservation has just changed; SQLite takes
writers in turn). ``cost`` is the request's worst case on any model it may
go to: the prompt as measured at the prompt price (a cache write's, on a
model with a cache block) plus the answer it may ask for (``max_tokens``,
else the model's ``default_max_tokens``, else what is left of its window) at
the completion price. The reservation rides on the decision row
(``HOLD_KEY``), through the journal and the spool, and is settled in the
transaction that inserts the row (routing/recording/inserts.py calls
``settle``): the worst case comes off ``reserved``, what the row cost goes
onto ``settled``, exactly once as the row is. A row recovered from a dead
worker's journal settles its whole worst case. A key thus spends at most
its budget plus what its answers cost over their worst case (billed tokens
above the router's three-characters-a-token estimate).

A period's ledger starts, at its first reservation, from the spend the
decisions recorded so far (routing.limits.budgets). A database that cannot
be written leaves the request to the cached spend's check, logged
``budget_unchecked``, as before: the budget is not worth failing requests for.
"""

from __future__ import annotations

import functools
import logging
import threading
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import Error as DatabaseFailure
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from routing.db_writes import request_write
from routing.limits.budgets import budget_period, spend_by_key, spend_usd
from routing.limits.refusals import budget_reserved, count_refusal
from routing.models import ApiKey, BudgetLedger, LimitRefusal
from routing.pricing import PER_TOKENS

log = logging.getLogger("router.limits")

# The decision field that carries a reservation to the row's insert (not a column).
HOLD_KEY = "_budget_hold"

# Dollars of slack in the comparison: prices per token are fractions whose sums drift in
# their last bits (five requests of $1 must fit a $5 budget); a nanodollar is no overshoot.
SLACK_USD = 1e-9

# Ledger ids by (key, period start): a warm reservation is the one UPDATE.
_ledgers: dict[tuple[int, object], int] = {}
_ledgers_lock = threading.Lock()


@dataclass(frozen=True)
class Hold:
    """A request's reserved worst case on its key's ledger."""

    ledger_id: int
    reserved_usd: float

    def as_field(self) -> dict:
        return {"ledger": self.ledger_id, "reserved": self.reserved_usd}

    def release(self) -> None:
        """Give the reservation back: the request never reached an upstream."""
        try:
            with request_write():
                _settle_one(self.ledger_id, self.reserved_usd, 0.0)
        except DatabaseFailure as error:
            # Held until the period ends: the key may be refused early, never overspend.
            log.warning("budget_hold_kept ledger=%s: %s", self.ledger_id, type(error).__name__)


def worst_case_usd(plan) -> float:
    """The most this request can cost on any model it may be sent to."""
    prompt_tokens = plan.measured_tokens
    asked = plan.request.max_tokens
    costs = []
    for model in plan.candidates:
        write = model.cache.write_multiplier if model.cache is not None else 1.0
        answer = asked or model.default_max_tokens or max(model.context_window - prompt_tokens, 0)
        costs.append(
            (prompt_tokens * model.prompt_price * write + answer * model.completion_price)
            / PER_TOKENS
        )
    return max(costs, default=0.0)


def reserve(plan, key: ApiKey) -> Hold | None:
    """Reserve the request's worst case on its key's hard budget; None for a key without
    one (or while the database cannot be written). Raises LimitExceeded when it does not fit."""
    if key is None or key.budget_usd is None:
        return None
    cost = worst_case_usd(plan)
    try:
        for _ in range(2):
            ledger_id = _ledger_id(key, plan.config)
            if ledger_id is None:
                return None
            with request_write(), connection.cursor() as cursor:
                limit = key.budget_usd + SLACK_USD - cost
                cursor.execute(_reserve_sql(connection.vendor), [cost, ledger_id, limit])
                taken = cursor.rowcount
            if taken:
                return Hold(ledger_id, cost)
            ledger = BudgetLedger.objects.filter(pk=ledger_id).first()
            if ledger is not None:
                break
            forget_ledgers()  # the cached id is gone (a database restored): look it up again
        else:
            return None
    except DatabaseFailure as error:
        log.warning("budget_unchecked key=%s: %s", key.pk, type(error).__name__)
        return None
    count_refusal(key, LimitRefusal.REASON_BUDGET)
    raise budget_reserved(key, plan.config, ledger.settled_usd, ledger.reserved_usd, cost)


@contextmanager
def held(plan, key: ApiKey):
    """Reserve (``reserve``) for the block, which opens the decision; a block that raises
    (the request refused before any upstream call) gives the reservation back."""
    hold = reserve(plan, key)
    try:
        yield hold
    except BaseException:
        if hold is not None:
            hold.release()
        raise


def _ledger_id(key: ApiKey, config) -> int | None:
    start = budget_period(key.budget_period, config, timezone.now()).start
    cached = _ledgers.get((key.pk, start))
    if cached is not None:
        return cached
    ledger = BudgetLedger.objects.filter(api_key=key, period_start=start).first()
    if ledger is None:
        # The period's first reservation: it starts from what the key's decisions spent.
        spent = spend_by_key([key], config)[key.pk].spent_usd
        try:
            with request_write(), transaction.atomic():
                ledger = BudgetLedger.objects.create(
                    api_key=key, period_start=start, settled_usd=spent
                )
        except IntegrityError:  # another worker made it first (or the key is gone)
            ledger = BudgetLedger.objects.filter(api_key=key, period_start=start).first()
            if ledger is None:
                return None
    with _ledgers_lock:
        _ledgers[(key.pk, start)] = ledger.pk
    return ledger.pk


def charge(fields: dict, model) -> None:
    """Note on a finished row's reservation what the row cost, for ``settle``."""
    hold = fields.get(HOLD_KEY)
    if isinstance(hold, dict):
        prompt = fields.get("billed_prompt_cost_usd")
        if prompt is None:
            prompt = fields.get("estimated_cost_usd")
        hold["charged"] = spend_usd(prompt, fields.get("completion_tokens"), model)


def settle(rows: list[dict]) -> None:
    """Settle the reservations of rows being inserted; call inside the insert's transaction.

    One statement a ledger, whatever the rows of its key in the batch (the writer's, a
    drain's): their reservations and costs summed (the floor at zero is the same for
    the sum as for each in turn)."""
    totals: dict = {}
    for fields in rows:
        hold = fields.get(HOLD_KEY)
        if not isinstance(hold, dict):
            continue
        reserved = float(hold.get("reserved") or 0.0)
        # A row without its cost (a dead worker's, from its journal) spent its worst case.
        charged = hold.get("charged")
        charged = reserved if charged is None else float(charged)
        before = totals.get(hold.get("ledger"), (0.0, 0.0))
        totals[hold.get("ledger")] = (before[0] + reserved, before[1] + charged)
    for ledger_id, (reserved, charged) in totals.items():
        _settle_one(ledger_id, reserved, charged)


def _settle_one(ledger_id, reserved: float, charged: float) -> None:
    with connection.cursor() as cursor:
        cursor.execute(_settle_sql(connection.vendor), [reserved, charged, ledger_id])


# The two statements every budgeted request runs are written out once, as
# routing.conversations writes its UPDATE: built through the ORM (F, Value,
# Greatest) each took 0.7-1.0 ms of Python a request, the statement itself a
# tenth of that (bench/bench_stages.py, SQLite, this 2-core machine).
@functools.cache
def _reserve_sql(vendor: str) -> str:
    """Reserve (cost, ledger id, budget + slack - cost): the row count says if it fit."""
    q = connection.ops.quote_name
    reserved, settled = q("reserved_usd"), q("settled_usd")
    return (
        f"UPDATE {q(BudgetLedger._meta.db_table)} SET {reserved} = {reserved} + %s "
        f"WHERE {q('id')} = %s AND {settled} <= %s - {reserved}"
    )


@functools.cache
def _settle_sql(vendor: str) -> str:
    """Settle (reserved, charged, ledger id)."""
    q = connection.ops.quote_name
    reserved, settled = q("reserved_usd"), q("settled_usd")
    # Never below zero: sums of floats drift by their last bits. SQLite's two-argument
    # MAX is PostgreSQL's GREATEST.
    greatest = "MAX" if vendor == "sqlite" else "GREATEST"
    return (
        f"UPDATE {q(BudgetLedger._meta.db_table)} SET "
        f"{reserved} = {greatest}({reserved} - %s, 0.0), {settled} = {settled} + %s "
        f"WHERE {q('id')} = %s"
    )


def forget_ledgers() -> None:
    """Drop the cached ledger ids (tests: a rolled-back database)."""
    with _ledgers_lock:
        _ledgers.clear()
