"""Conversations and their tasks as the quality block samples them: each counted once, in
the hour of its latest decision, with the figures of its life.

The quality block's means (cost per conversation, turns and prompt tokens per task) and the
conversations pinch made cheaper or dearer are figures of a conversation, not of a
decision: they cannot be summed decision by decision. They used to be summed per
conversation and hour and then per conversation over the window: a read that grew with the
conversations (2 s at 3 million decisions). Here each conversation, and each task of it,
is a unit (``QualityUnit``) with running figures, and ``ArmHour`` keeps, per hour and arm,
the moments (how many, sum, sum of squares) of the units whose latest decision falls in
that hour. When a decision is recorded, its units' figures go from *before* to *after*:
the unit leaves its place (``placed(before)`` subtracted) and takes its new one
(``placed(after)`` added), so a window's figures are its hours' rows, whatever the traffic.

- Late and out-of-order rows: a unit's latest decision is the one with the latest
  ``created_at`` (a tie goes to the one recorded last, as for the conversation's row), so a
  late row adds to the figures and leaves the unit where it was.
- Purges (routing/summaries/purge.py): the purged decisions are taken out of their units
  the same way, so a unit's figures are always those of its decisions in the log, and a
  unit with none left goes.
- ``placed`` is the one home of what a unit adds; recording, purging and rebuilding
  (``routing.summaries.writes.recompute``: ``fold`` over the log, oldest first) all go
  through it.
- The completion tokens are priced at their model's price when the decision is recorded
  (a sum of squares cannot be repriced later); a rebuild prices them at today's.

A request's units are read in one statement, locked (``SELECT ... FOR UPDATE`` on
PostgreSQL, in the order of their keys, so two writers cannot deadlock; SQLite's
transactions take the write lock first), and written in one more; a conversation's
first request creates its units in one between.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from itertools import repeat

from django.db import connection

from routing import db_writes
from routing.models import QualityUnit
from routing.pricing import PER_TOKENS
from routing.summaries.contributions import NO_TASK, hour_of, unit_figures

DOLLAR_DIGITS = 6  # the net saving is shown to the micro-dollar
HALF_A_MICRODOLLAR = 0.5 * 10**-DOLLAR_DIGITS  # a net that rounds to a micro-dollar or more
SUMS = (
    "decisions",
    "billed_decisions",
    "billed_usd",
    "completion_usd",
    "net_usd",
    "net_decisions",
    "surprises",
    "prompt_tokens",
    "pruned",
)
LATEST = ("arm", "last_at", "last_answer_tool_calls")
COLUMNS = ("conversation", "task", *LATEST, *SUMS)


def completion_prices(config) -> dict[str, float]:
    """USD per completion token, by model id (a model no longer configured: $0)."""
    return {model.id: model.completion_price / PER_TOKENS for model in config.models}


def _keys(fields: Mapping) -> tuple:
    conversation = fields.get("conversation")
    if not conversation:
        return ()  # no conversation (none since conversations were keyed): no unit
    task = fields.get("quality_task")
    whole = (conversation, NO_TASK)
    return (whole,) if task is None else (whole, (conversation, task))


def _empty(key: tuple) -> dict:
    return {
        "conversation": key[0],
        "task": key[1],
        "arm": "",
        "last_at": None,
        "last_answer_tool_calls": None,
        **dict.fromkeys(SUMS, 0),
    }


def fold(units: dict, fields: Mapping, prices: dict, decision: dict | None = None) -> None:
    """Add one decision to its units in ``units`` ({(conversation, task): unit}), in memory."""
    keys = _keys(fields)
    if not keys:
        return
    added = unit_figures(fields, decision)
    added["completion_usd"] = (fields.get("completion_tokens") or 0) * prices.get(
        fields.get("chosen_model") or "", 0.0
    )
    for key in keys:
        unit = units.get(key)
        if unit is None:
            unit = units[key] = _empty(key)
        for name in SUMS:
            unit[name] += added[name]
        _take_latest(unit, fields["created_at"], fields.get("arm"), fields.get("answer_tool_calls"))


def _take_latest(unit: dict, at, arm, tool_calls) -> None:
    """The unit holds its latest decision's arm and answer (a blank arm keeps the one before)."""
    if unit["last_at"] is None or unit["last_at"] <= at:
        unit["last_at"] = at
        unit["arm"] = arm or unit["arm"]
        unit["last_answer_tool_calls"] = tool_calls


def placed(unit: Mapping) -> tuple[tuple, dict] | None:
    """Where a unit counts in ``ArmHour`` ((hour, arm)) and what it adds there; None for a
    unit without decisions."""
    if unit["decisions"] <= 0:
        return None
    where = (hour_of(unit["last_at"]), unit["arm"])
    if unit["task"] != NO_TASK:
        turns, tokens = unit["decisions"], unit["prompt_tokens"]
        return where, {
            "tasks": 1,
            "task_turns": turns,
            "task_turn_squares": turns * turns,
            "task_tokens": tokens,
            "task_token_squares": float(tokens) * tokens,
        }
    billed = unit["billed_decisions"] > 0
    cost = unit["billed_usd"] + unit["completion_usd"] if billed else 0.0
    net, netted = unit["net_usd"], unit["net_decisions"] > 0
    return where, {
        "conversations": 1,
        "billed_conversations": int(billed),
        "cost_usd": cost,
        "cost_squares": cost * cost,
        "cheaper": int(netted and net >= HALF_A_MICRODOLLAR),
        "dearer": int(netted and net <= -HALF_A_MICRODOLLAR),
        "surprised": int(unit["surprises"] > 0),
        "asked_tools": int(unit["last_answer_tool_calls"] is True),
        "pruned_conversations": int(unit["pruned"] > 0),
    }


def _shift(moves: dict, unit: Mapping | None, sign: int) -> None:
    where = None if unit is None else placed(unit)
    if where is not None:
        dimensions, figures = where
        moves[dimensions].update({name: sign * value for name, value in figures.items()})


def record(rows: Iterable[Mapping], config, figures: list | None = None) -> dict[tuple, Counter]:
    """Add inserted decisions to their units in the database; returns what the units' moves
    add to ``ArmHour`` ({(hour, arm): figures}). Call in the transaction that inserts them.
    ``figures``: the rows' ``decision_figures``, in their order, when known.

    Two statements for a request's units (its conversation's and its task's): one locked
    read of both, one write of both. A new unit is first created empty (``ON CONFLICT DO
    NOTHING``: a writer creating the same one at once waits for it, then adds to it); the
    units that insert created are what it says they are, and locked (this transaction
    wrote them): only one another writer created meanwhile is read again."""
    added: dict = {}
    prices = completion_prices(config)
    for fields, decision in zip(rows, figures or repeat(None)):
        fold(added, fields, prices, decision)
    keys = sorted(added)
    held = _locked(keys)
    missing = [key for key in keys if key not in held]
    if missing:
        created = _insert_empty([added[key] for key in missing])
        held.update(created)
        taken = [key for key in missing if key not in created]
        if taken:
            held.update(_locked(taken))
    moves: dict = defaultdict(Counter)
    after_all = []
    for key in keys:
        before, delta = held[key], added[key]
        after = {**before, **{name: before[name] + delta[name] for name in SUMS}}
        _take_latest(after, delta["last_at"], delta["arm"], delta["last_answer_tool_calls"])
        after_all.append(after)
        _shift(moves, before, -1)
        _shift(moves, after, 1)
    _write(after_all)
    return moves


def remove(rows: Iterable[Mapping], config) -> dict[tuple, Counter]:
    """Take purged decisions out of their units (each keeps its latest decision, the purge
    taking the oldest; a unit left without decisions goes); returns ``ArmHour``'s moves."""
    removed: dict = {}
    prices = completion_prices(config)
    for fields in rows:
        fold(removed, fields, prices)
    held = _locked(sorted(removed))
    moves: dict = defaultdict(Counter)
    kept, gone = [], []
    for key, before in sorted(held.items()):
        after = {**before, **{name: before[name] - removed[key][name] for name in SUMS}}
        (kept if after["decisions"] > 0 else gone).append(after)
        _shift(moves, before, -1)
        _shift(moves, after, 1)
    _write(kept)
    for part in _chunks(gone):
        QualityUnit.objects.filter(id__in=[unit["id"] for unit in part]).delete()
    return moves


def placed_sums(units: Iterable[Mapping]) -> dict[tuple, Counter]:
    """What the units add to ``ArmHour``, summed: a rebuild's (and a bulk fill's) figures."""
    sums: dict = defaultdict(Counter)
    for unit in units:
        _shift(sums, unit, 1)
    return sums


def insert_all(units: dict, batch: int = 5000) -> None:
    """Insert units folded in memory (none of them in the table yet), in bulk."""
    rows = [QualityUnit(**unit) for unit in units.values()]
    QualityUnit.objects.bulk_create(rows, batch_size=batch)


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


UNITS_A_STATEMENT = 70  # 14 columns a unit: under SQLite's oldest limit of 999 parameters


def _chunks(items: list) -> Iterable[list]:
    for start in range(0, len(items), UNITS_A_STATEMENT):
        yield items[start : start + UNITS_A_STATEMENT]


@functools.cache
def _sql(vendor: str, units: int) -> dict[str, str]:
    """The statements for ``units`` units, built once per shape (the ORM's building cost more
    than running them: routing.conversations)."""
    table = _q(QualityUnit._meta.db_table)
    key = f"({_q('conversation')}, {_q('task')})"
    keys = ", ".join(["(%s, %s)"] * units)
    lock = " FOR UPDATE" if vendor == "postgresql" else ""
    columns = ", ".join(_q(c) for c in COLUMNS)
    values = ", ".join(["(" + ", ".join(["%s"] * len(COLUMNS)) + ")"] * units)
    sets = ", ".join(f"{_q(c)} = excluded.{_q(c)}" for c in (*LATEST, *SUMS))
    insert = f"INSERT INTO {table} ({columns}) VALUES {values} ON CONFLICT {key} DO"
    return {
        # In key order, so two writers lock the units they share in the same order.
        "select": f"SELECT {_q('id')}, {columns} FROM {table} WHERE {key} IN ({keys}) "
        f"ORDER BY {_q('conversation')}, {_q('task')}{lock}",
        # The keys of the units it created (none for a unit that was there).
        "insert": f"{insert} NOTHING RETURNING {_q('conversation')}, {_q('task')}",
        "write": f"{insert} UPDATE SET {sets}",
    }


def _locked(keys: list) -> dict:
    """{key: unit} of the units of ``keys`` the table holds, locked until the commit."""
    held = {}
    for part in _chunks(keys):
        with db_writes.cursor() as cursor:
            cursor.execute(
                _sql(connection.vendor, len(part))["select"], [v for k in part for v in k]
            )
            rows = cursor.fetchall()
        for row in rows:
            unit = dict(zip(("id", *COLUMNS), row, strict=True))
            unit["last_at"] = _aware(unit["last_at"])
            held[(unit["conversation"], unit["task"])] = unit
    return held


def _aware(value):
    """A datetime as the database gives it back (SQLite: naive UTC text or datetime)."""
    field = QualityUnit._meta.get_field("last_at")
    converters = connection.ops.get_db_converters(field.get_col(QualityUnit._meta.db_table))
    for converter in converters:
        value = converter(value, field, connection)
    return value


def _run(statement: str, units: list) -> list:
    """Run ``statement`` on ``units``, in chunks; returns the rows it returns."""
    adapt = connection.ops.adapt_datetimefield_value
    returned = []
    for part in _chunks(units):
        params = [adapt(u[c]) if c == "last_at" else u[c] for u in part for c in COLUMNS]
        with db_writes.cursor() as cursor:
            cursor.execute(_sql(connection.vendor, len(part))[statement], params)
            if cursor.description is not None:
                returned.extend(cursor.fetchall())
    return returned


def _insert_empty(units: list) -> dict:
    """Create units with no decisions yet (at their first decision's time), unless there;
    returns {key: unit} of those it created."""
    empty = {(u["conversation"], u["task"]): {**u, **dict.fromkeys(SUMS, 0)} for u in units}
    return {key: empty[key] for key in _run("insert", list(empty.values()))}


def _write(units: list) -> None:
    """Write locked units' new figures (an upsert of rows that exist: one statement)."""
    _run("write", units)
