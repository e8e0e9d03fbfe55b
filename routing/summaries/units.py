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
  (``rebuild``, from the log, with ``fold``) all go through it.
- The completion tokens are priced at their model's price when the decision is recorded
  (a sum of squares cannot be repriced later); a rebuild prices them at today's.

Rows are locked (``SELECT ... FOR UPDATE`` on PostgreSQL; SQLite's transactions take
the write lock first) in the order of their keys, so two writers cannot deadlock.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from django.db import connection

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
    }


def _shift(moves: dict, unit: Mapping | None, sign: int) -> None:
    where = None if unit is None else placed(unit)
    if where is not None:
        dimensions, figures = where
        moves[dimensions].update({name: sign * value for name, value in figures.items()})


def record(rows: Iterable[Mapping], config) -> dict[tuple, Counter]:
    """Add inserted decisions to their units in the database; returns what the units' moves
    add to ``ArmHour`` ({(hour, arm): figures}). Call in the transaction that inserts them."""
    added: dict = {}
    prices = completion_prices(config)
    for fields in rows:
        fold(added, fields, prices)
    moves: dict = defaultdict(Counter)
    for key in sorted(added):
        delta = added[key]
        before = _locked(key)
        if before is None and _created(delta):
            _shift(moves, delta, 1)
            continue
        if before is None:  # another writer created it since: add to theirs
            before = _locked(key)
        after = {**before, **{name: before[name] + delta[name] for name in SUMS}}
        _take_latest(after, delta["last_at"], delta["arm"], delta["last_answer_tool_calls"])
        _save(after)
        _shift(moves, before, -1)
        _shift(moves, after, 1)
    return moves


def remove(rows: Iterable[Mapping], config) -> dict[tuple, Counter]:
    """Take purged decisions out of their units (each keeps its latest decision, the purge
    taking the oldest; a unit left without decisions goes); returns ``ArmHour``'s moves."""
    removed: dict = {}
    prices = completion_prices(config)
    for fields in rows:
        fold(removed, fields, prices)
    moves: dict = defaultdict(Counter)
    for key in sorted(removed):
        before = _locked(key)
        if before is None:
            continue
        after = {**before, **{name: before[name] - removed[key][name] for name in SUMS}}
        if after["decisions"] <= 0:
            QualityUnit.objects.filter(conversation=key[0], task=key[1]).delete()
        else:
            _save(after)
        _shift(moves, before, -1)
        _shift(moves, after, 1)
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


@functools.cache
def _sql(vendor: str) -> dict[str, str]:
    """The statements of the write path, built once (the ORM's building cost more than
    running them: routing.conversations)."""
    table = _q(QualityUnit._meta.db_table)
    where = f"{_q('conversation')} = %s AND {_q('task')} = %s"
    lock = " FOR UPDATE" if vendor == "postgresql" else ""
    columns = ", ".join(_q(c) for c in COLUMNS)
    marks = ", ".join(["%s"] * len(COLUMNS))
    sets = ", ".join(f"{_q(c)} = %s" for c in (*LATEST, *SUMS))
    return {
        "select": f"SELECT {columns} FROM {table} WHERE {where}{lock}",
        "insert": f"INSERT INTO {table} ({columns}) VALUES ({marks}) "
        f"ON CONFLICT ({_q('conversation')}, {_q('task')}) DO NOTHING",
        "update": f"UPDATE {table} SET {sets} WHERE {where}",
    }


def _locked(key: tuple) -> dict | None:
    with connection.cursor() as cursor:
        cursor.execute(_sql(connection.vendor)["select"], list(key))
        row = cursor.fetchone()
    if row is None:
        return None
    unit = dict(zip(COLUMNS, row, strict=True))
    unit["last_at"] = _aware(unit["last_at"])
    return unit


def _aware(value):
    """A datetime as the database gives it back (SQLite: naive UTC text or datetime)."""
    field = QualityUnit._meta.get_field("last_at")
    converters = connection.ops.get_db_converters(field.get_col(QualityUnit._meta.db_table))
    for converter in converters:
        value = converter(value, field, connection)
    return value


def _params(unit: Mapping, names) -> list:
    adapt = connection.ops.adapt_datetimefield_value
    return [adapt(unit[n]) if n == "last_at" else unit[n] for n in names]


def _created(unit: Mapping) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(_sql(connection.vendor)["insert"], _params(unit, COLUMNS))
        return cursor.rowcount == 1


def _save(unit: Mapping) -> None:
    params = _params(unit, (*LATEST, *SUMS)) + [unit["conversation"], unit["task"]]
    with connection.cursor() as cursor:
        cursor.execute(_sql(connection.vendor)["update"], params)
