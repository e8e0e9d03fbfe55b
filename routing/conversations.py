"""Keeping each conversation's row (routing/models/conversation.py) as its decisions are recorded.

``record`` is called once per decision row inserted, in the same transaction
(routing/recording/inserts.py, the one insert of the live write and the
spool's drain), so a row written exactly once counts exactly once. It adds
the row's figures to the conversation's totals in the database (one UPDATE
of ``total = total + n``: two workers recording for one conversation never
lose an increment) and moves the conversation's state to the row's only when the row
is the conversation's latest: a row recorded late (spooled, drained after a
later one) adds to the totals and leaves the state as the later one left it,
the later-of rule routing.conversation_state applies to what it reads back.
A blank value (a passthrough request has no routing state, pinch off leaves
no ledger) leaves the one before, as each worker's memory does.

``TOTALS`` is the one home of each running total: what a decision row adds
(in Python, as it is written) and the same figure over decision rows (in
SQL: ``recomputed``, which the migration builds the rows with and the tests
hold the running totals to).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from datetime import timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, FloatField, Max, Min, Q, Sum, Value, Window
from django.db.models.functions import Coalesce, RowNumber
from django.utils import timezone

from routing import db_writes
from routing.models import BILLED, NET_SAVED, PRUNED, TOKENS_SAVED, Conversation, tokens_saved
from routing.summaries.contributions import failed

# The conversation's state, on a decision's fields as the recording path holds them (and
# the spool keeps them) but not on the decision row: what the next request reads back.
STATE_FIELDS = ("route_state", "pinch_ledger", "payload_fingerprints")
# What the conversation holds of its latest request: its field <- the decision's.
HELD = {
    "session": "session",
    "agent": "agent",
    "arm": "arm",
    "model": "chosen_model",
    "tier": "tier",
    **{name: name for name in STATE_FIELDS},
}
# Taken from the latest request even when unknown (NULL): what it last answered.
LAST = {"last_status": "status_code", "last_answer_tool_calls": "answer_tool_calls"}
QUALITY = (
    "quality_calls",
    "quality_repeats_compressed",
    "quality_repeats_whole",
    "quality_seen_compressed",
    "quality_seen_whole",
    "quality_results",
    "quality_errors",
)

FAILED = Q(status_code__isnull=True) | Q(status_code__gte=400)


def _failed(row: dict) -> bool:
    return failed(row.get("status_code"))


def _billed(row: dict) -> bool:
    return (
        row.get("billed_prompt_cost_usd") is not None and row.get("unpruned_cost_usd") is not None
    )


def _role(role: str) -> Callable[[dict], int]:
    return lambda row: int(row.get("session_role") == role)


def _sum_of(column: str) -> Callable[[dict], int]:
    return lambda row: row.get(column) or 0


def _when_billed(value: Callable[[dict], float]) -> Callable[[dict], float]:
    return lambda row: value(row) if _billed(row) else 0.0


def _summed(expression, **extra):
    return Coalesce(Sum(expression, **extra), Value(0))


# Each total: (what one decision's fields add, the same over decision rows in SQL).
TOTALS: dict[str, tuple[Callable[[dict], float], object]] = {
    "requests": (lambda row: 1, Count("id")),
    "failed_requests": (lambda row: int(_failed(row)), Count("id", filter=FAILED)),
    # A turn is the user speaking and the model answering: the retries of a failed call
    # (an agent resends the same turn until it gives up) are not turns.
    "turns": (
        lambda row: int(
            bool(row.get("user_turn")) and row.get("session_role") == "main" and not _failed(row)
        ),
        Count("id", filter=Q(user_turn=True, session_role="main") & ~FAILED),
    ),
    "subagent_requests": (_role("subagent"), Count("id", filter=Q(session_role="subagent"))),
    "background_requests": (
        _role("background"),
        Count("id", filter=Q(session_role="background")),
    ),
    "tokens_sent": (_sum_of("measured_tokens"), _summed("measured_tokens")),
    "tokens_saved": (
        lambda row: (
            tokens_saved(row.get("pinch_original_tokens"), row.get("pinch_final_tokens")) or 0
        ),
        _summed(TOKENS_SAVED, filter=PRUNED),
    ),
    "billed_requests": (lambda row: int(_billed(row)), Count("id", filter=BILLED)),
    "billed_usd": (
        _when_billed(lambda row: row["billed_prompt_cost_usd"]),
        Coalesce(Sum("billed_prompt_cost_usd", filter=BILLED), Value(0.0)),
    ),
    "unpruned_usd": (
        _when_billed(lambda row: row["unpruned_cost_usd"]),
        Coalesce(Sum("unpruned_cost_usd", filter=BILLED), Value(0.0)),
    ),
    "net_saved_usd": (
        _when_billed(lambda row: row["unpruned_cost_usd"] - row["billed_prompt_cost_usd"]),
        Coalesce(Sum(NET_SAVED, filter=BILLED), Value(0.0)),
    ),
    **{name: (_sum_of(name), _summed(name)) for name in QUALITY},
}


def decision_columns(fields: dict) -> dict:
    """A decision's fields without the conversation's state: the decision row's columns."""
    return {name: value for name, value in fields.items() if name not in STATE_FIELDS}


def record(rows: Iterable[dict]) -> None:
    """Add each inserted decision (its fields, state included) to its conversation's row.

    Call inside the transaction that inserts them; rows without a
    conversation (none since conversations were keyed) are left out. A conversation's
    rows (in their order) go in one UPDATE for as many of them as ``_runs`` lets
    through, which leaves its row as one UPDATE a row would (``_folded``): the writer's
    batch of a busy conversation used to be an UPDATE per request. Conversations in the
    order of their keys, so two writers lock the rows they share in the same order.
    """
    mine: dict[str, list[dict]] = {}
    for fields in rows:
        if fields.get("conversation"):
            mine.setdefault(fields["conversation"], []).append(fields)
    for key in sorted(mine):
        for run in _runs(mine[key]):
            _add(run)


# Rows at most one UPDATE takes: its statement has a form per count (the float totals'
# additions), and the writer's batch is 64 rows (routing/recording/writer.py).
MAX_FOLDED = 64
# The totals kept as floats: added in the rows' order, one addition at a time, as one
# UPDATE a row added them (float addition is not associative).
FLOATS = tuple(
    name for name in TOTALS if isinstance(Conversation._meta.get_field(name), FloatField)
)


def _runs(rows: list[dict]) -> Iterable[list[dict]]:
    """A conversation's rows in runs one UPDATE can take: a run's models (a blank one aside)
    are one, as ``models_used`` takes a single model a statement."""
    run: list[dict] = []
    model = ""
    for fields in rows:
        mine = fields.get("chosen_model") or ""
        if run and (len(run) == MAX_FOLDED or (mine and model and mine != model)):
            yield run
            run, model = [], ""
        run.append(fields)
        model = model or mine
    if run:
        yield run


@functools.cache
def _update_sql(vendor: str, rows: int = 1) -> str:
    """The UPDATE that adds ``rows`` decisions to their conversation's row, one statement.

    Written out rather than built with ``F()`` and ``Case``: the ORM took 1.5 ms
    to build it on every request, ten times the statement's own time
    (SQLite, this machine). Plain SQL both databases take; every SET sees the
    row as it was, so ``last_at <= %s`` asks whether a decision is the latest.
    """
    q = connection.ops.quote_name
    latest = f"{q('last_at')} <= %s"
    sets = [f"{q(name)} = {q(name)}" + " + %s" * (rows if name in FLOATS else 1) for name in TOTALS]
    # A blank value leaves the one before (NULLIF: '' is NULL, and COALESCE keeps the old).
    sets += [
        f"{q(name)} = CASE WHEN {latest} THEN COALESCE(NULLIF(%s, ''), {q(name)}) "
        f"ELSE {q(name)} END"
        for name in HELD
    ]
    sets += [f"{q(name)} = CASE WHEN {latest} THEN %s ELSE {q(name)} END" for name in LAST]
    used = q("models_used")
    sets += [
        f"{used} = CASE WHEN %s = '' OR {used} LIKE %s ESCAPE '\\' THEN {used} "
        f"ELSE {used} || %s END",
        f"{q('first_at')} = CASE WHEN {q('first_at')} > %s THEN %s ELSE {q('first_at')} END",
        f"{q('last_at')} = CASE WHEN {latest} THEN %s ELSE {q('last_at')} END",
    ]
    table = q(Conversation._meta.db_table)
    return f"UPDATE {table} SET {', '.join(sets)} WHERE {q('key')} = %s"


def _like(text: str) -> str:
    """``text`` as a LIKE pattern matches it, anywhere (escaped with a backslash)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%|{escaped}|%"


def _folded(run: list[dict]) -> list:
    """The parameters of ``_update_sql(vendor, len(run))``: what the run's rows, one UPDATE
    each in their order, would leave.

    A row moves the state when the row's time is at least ``last_at``, which it then
    becomes: so only a row at least as late as every one before it in the run can (one
    of the run's ``latest``), and which of those do depends on ``last_at`` before the
    run, which only the database knows. Those that do are the latest of them (their
    times only grow); a field kept from the latest request (``LAST``) is the last of
    them's, if any moved, and one a blank value leaves (``HELD``) is the last non-blank
    one's if that one moved, else what it was: each field asks with its row's time.
    """
    adapt = connection.ops.adapt_datetimefield_value
    # Compared as the database compares them: the values it holds.
    whens = [adapt(fields["created_at"]) for fields in run]
    latest: list[int] = []
    for n, when in enumerate(whens):
        if not latest or whens[latest[-1]] <= when:
            latest.append(n)
    last = latest[-1]
    params = []
    for name, (add, _) in TOTALS.items():
        added = [add(fields) for fields in run]
        params += added if name in FLOATS else [sum(added)]
    for source in HELD.values():
        given = [n for n in latest if run[n].get(source)]
        n = given[-1] if given else last
        params += [whens[n], run[n].get(source) or ""]
    for source in LAST.values():
        params += [whens[last], run[last].get(source)]
    model = next((m for fields in run if (m := fields.get("chosen_model"))), "")
    first = min(whens)
    params += [model, _like(model), f"{model}|", first, first, whens[last], whens[last]]
    return params


def _update(run: list[dict]) -> int:
    """Add the run's rows to their conversation's row; returns the rows changed (0: none yet)."""
    params = [*_folded(run), run[0]["conversation"]]
    with db_writes.cursor() as cursor:
        cursor.execute(_update_sql(connection.vendor, len(run)), params)
        return cursor.rowcount


def _add(run: list[dict]) -> None:
    if _update(run):
        return
    # The conversation's first request: its row is made from the first, the rest added.
    fields = run[0]
    at = fields["created_at"]
    model = fields.get("chosen_model") or ""
    new = Conversation(
        key=fields["conversation"],
        api_key_id=fields.get("api_key_id"),
        first_at=at,
        last_at=at,
        models_used=f"|{model}|" if model else "|",
        **{name: add(fields) for name, (add, _) in TOTALS.items()},
        **{name: fields.get(source) or "" for name, source in HELD.items()},
        **{name: fields.get(source) for name, source in LAST.items()},
    )
    try:
        with transaction.atomic():
            new.save(force_insert=True)
    except IntegrityError:
        # Another worker created it between the update and the insert: add to theirs.
        _update(run)
        return
    if len(run) > 1:
        _update(run[1:])


def recomputed(decisions) -> dict[str, dict]:
    """Each conversation's totals summed over ``decisions`` (a RouteDecision queryset), by key:
    what the running totals must equal while none of its rows was purged."""
    grouped = (
        decisions.exclude(conversation="")
        .values("conversation")
        .annotate(**{name: total for name, (_, total) in TOTALS.items()})
        .order_by()
    )
    return {row.pop("conversation"): row for row in grouped}


# What a conversation built from the log holds of its last decision row: what the write
# path holds (HELD, LAST), but the state, which is no decision row's any more.
LAST_ROW = {
    "api_key_id": "api_key_id",
    **{name: source for name, source in HELD.items() if name not in STATE_FIELDS},
    **LAST,
}
BUILD_BATCH = 1000


def build_from_log(decision_model, conversation_model, last_row: dict = LAST_ROW) -> None:
    """Build a conversation row for each conversation of the log, in bulk: its totals by
    ``TOTALS``, ``last_row``'s fields from its latest decision. For the migration that
    introduced the rows (with its historical models) and for a log filled in bulk."""
    decisions = decision_model.objects.exclude(conversation="").order_by()
    totals = {
        row.pop("conversation"): row
        for row in decisions.values("conversation")
        .annotate(
            first_at=Min("created_at"),
            last_at=Max("created_at"),
            **{name: total for name, (_, total) in TOTALS.items()},
        )
        .iterator()
    }
    used: dict[str, list[str]] = {}
    pairs = decisions.values_list("conversation", "chosen_model").distinct()
    for key, model in pairs.iterator():
        if model:
            used.setdefault(key, []).append(model)
    last_rows = (
        decisions.annotate(
            place=Window(
                RowNumber(),
                partition_by=[F("conversation")],
                order_by=[F("created_at").desc(), F("id").desc()],
            )
        )
        .filter(place=1)
        .values("conversation", *set(last_row.values()))
    )
    batch = []
    for last in last_rows.iterator():
        key = last["conversation"]
        batch.append(
            conversation_model(
                key=key,
                models_used="|" + "".join(f"{m}|" for m in sorted(used.get(key, ()))),
                **{name: last[column] for name, column in last_row.items()},
                **totals[key],
            )
        )
        if len(batch) == BUILD_BATCH:
            conversation_model.objects.bulk_create(batch)
            batch = []
    conversation_model.objects.bulk_create(batch)


def forget_idle(days: int) -> int:
    """Delete the conversations whose last request is older than ``days`` days (their
    decisions are purged at that age too); returns how many went. A conversation
    still going keeps the totals of its whole life, purged rows included."""
    if days < 1:
        raise ValueError("days must be at least 1")
    idle = Conversation.objects.filter(last_at__lt=timezone.now() - timedelta(days=days))
    deleted, _ = idle.delete()
    return deleted


def clear_stale_fingerprints(kept: timedelta) -> int:
    """Blank the payload fingerprints of conversations idle longer than ``kept``; returns how
    many changed. They only serve to predict a cache the provider may still hold."""
    stale = Conversation.objects.filter(last_at__lt=timezone.now() - kept)
    return stale.exclude(payload_fingerprints="").update(payload_fingerprints="")
