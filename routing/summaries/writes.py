"""A decision's figures added to the summary tables; and the tables rebuilt from the log.

``add_to_summaries`` runs inside the one insert of the decision log
(routing/recording/inserts.py, for the request path and the spool's drain
alike): a row written exactly once is summed exactly once, because its figures
commit or roll back with it. Decision rows are never updated after that insert (the recording path
writes each one when its answer ends), so nothing is ever subtracted.

The figures go in as ``INSERT ... ON CONFLICT (dimensions) DO UPDATE SET
figure = figure + excluded.figure``, one statement per table, the same SQL on
SQLite and PostgreSQL: PostgreSQL takes the row lock for the increment, so
concurrent writers on several hosts never lose one, and SQLite's write lock
serialises them. Rows go in sorted by their dimensions, so two transactions
lock summary rows in the same order and cannot deadlock.

``recompute`` rebuilds the hours from a given one from the log, through the same
``contributions``; ``manage.py rebuild_summaries`` runs it.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from itertools import repeat

from django.db import connection, transaction

from routing import db_writes
from routing.models import (
    ArmHour,
    CompressedTools,
    DecisionSummary,
    KeySpend,
    QualityUnit,
    RouteDecision,
    SavedTokens,
)
from routing.summaries import units
from routing.summaries.contributions import (
    READS,
    contributions,
    day_of,
    decision_figures,
    hour_of,
)

TABLES = (DecisionSummary, KeySpend, SavedTokens, CompressedTools, ArmHour)
DIMENSIONS = {
    DecisionSummary: (
        "hour",
        "path",
        "chosen_model",
        "baseline_model",
        "status_code",
        "arm",
        "cache_miss_reason",
    ),
    KeySpend: ("hour", "api_key_id", "chosen_model"),
    SavedTokens: ("day", "bucket"),
    CompressedTools: ("hour", "tool"),
    ArmHour: ("hour", "arm"),
}
MAX_PARAMETERS = 900  # under SQLite's oldest limit of 999 bound parameters a statement
REBUILD_BATCH = 5000  # log rows read at a time by a rebuild


def add_to_summaries(rows: Iterable[Mapping], config=None) -> None:
    """Add the figures of decision rows (column values by name) to the summary tables, and
    the rows to their conversations' and tasks' units (routing/summaries/units.py) with
    the units' moves in ``ArmHour``, their completions priced by ``config`` (the live
    write's: the config its request was served under), else by the config in force."""
    rows = list(rows)
    # Each row's own figures, for the tables and its units alike.
    figures = [decision_figures(fields) for fields in rows]
    totals = summed(rows, figures=figures)
    moves = units.record(rows, config if config is not None else config_in_force(), figures)
    for dimensions, figures in moves.items():
        totals[ArmHour][dimensions].update(figures)
    add_summed(totals)


def config_in_force():
    """The config whose prices the completions get (imported late: the store reads
    routing.models, which imports this package's tables)."""
    from routing.config.store import current_config

    return current_config()


def add_summed(totals: dict[type, dict[tuple, Counter]]) -> None:
    """Add figures already summed (``summed``) to the summary tables."""
    for table, groups in totals.items():
        _upsert(table, groups)


def summed(rows: Iterable[Mapping], totals=None, figures=None) -> dict[type, dict[tuple, Counter]]:
    """{table: {dimension values: figures}}: what decision rows add, summed in memory (added
    to ``totals`` when given: a bulk fill sums its batches before writing them once).
    ``figures``: the rows' ``decision_figures``, in their order, when known."""
    if totals is None:
        totals = defaultdict(lambda: defaultdict(Counter))
    for fields, own in zip(rows, figures or repeat(None)):
        for table, dimensions, added in contributions(fields, own):
            totals[table][dimensions].update(added)
    return totals


@functools.cache
def _figures(table) -> tuple[str, ...]:
    """A table's figure columns: every column but its id and its dimensions."""
    dimensions = DIMENSIONS[table]
    return tuple(
        f.column
        for f in table._meta.concrete_fields
        if f.column not in dimensions and f.column != "id"
    )


@functools.cache
def _upsert_sql(table, rows: int, vendor: str) -> str:
    """The statement adding ``rows`` rows of figures to ``table``, built once per shape: the
    request path runs it on every decision (as routing.conversations builds its UPDATE once)."""
    quote = connection.ops.quote_name
    name = quote(table._meta.db_table)
    dimensions, figures = DIMENSIONS[table], _figures(table)
    columns = [*dimensions, *figures]
    updates = ", ".join(f"{quote(c)} = {name}.{quote(c)} + excluded.{quote(c)}" for c in figures)
    placeholders = ", ".join(["(" + ", ".join(["%s"] * len(columns)) + ")"] * rows)
    return (
        f"INSERT INTO {name} ({', '.join(quote(c) for c in columns)}) "
        f"VALUES {placeholders} "
        f"ON CONFLICT ({', '.join(quote(c) for c in dimensions)}) DO UPDATE SET {updates}"
    )


def _upsert(table, groups: dict[tuple, Counter]) -> None:
    figures = _figures(table)
    adapt = connection.ops.adapt_datetimefield_value
    keys = sorted(groups, key=lambda key: (adapt(key[0]), *key[1:]))
    chunk = max(1, MAX_PARAMETERS // (len(DIMENSIONS[table]) + len(figures)))
    with db_writes.cursor() as cursor:
        for start in range(0, len(keys), chunk):
            part = keys[start : start + chunk]
            params = []
            for key in part:
                values = groups[key]
                params.extend([adapt(key[0]), *key[1:], *(values.get(c, 0) for c in figures)])
            cursor.execute(_upsert_sql(table, len(part), connection.vendor), params)


def oldest_day() -> datetime | None:
    """The day of the oldest decision in the log: what a rebuild starts from by default."""
    oldest = RouteDecision.objects.order_by("created_at").values_list("created_at", flat=True)
    first = oldest.first()
    return None if first is None else day_of(first)


def recompute(since: datetime | None = None) -> int:
    """Rebuild every summary from ``since``'s day on (UTC; default: the log's oldest day)
    from the log, in one transaction; returns the decisions read.

    Days before it keep their figures: purge_decisions removes whole days of the
    log and leaves their figures (docs/summaries.md), so a default rebuild keeps them.
    The conversations' and tasks' units are rebuilt from the whole log (a unit's figures
    are of all its decisions), and those whose latest decision is from ``since`` on are
    placed again.
    """
    since = oldest_day() if since is None else day_of(since)
    if since is None:
        return 0
    prices = units.completion_prices(config_in_force())
    read = 0
    folded: dict = {}
    with transaction.atomic():
        for table in TABLES:
            table.objects.filter(**{f"{DIMENSIONS[table][0]}__gte": since}).delete()
        log = RouteDecision.objects.order_by("created_at", "id").values(*READS)
        batch = []
        for fields in log.iterator(chunk_size=REBUILD_BATCH):
            units.fold(folded, fields, prices)
            if fields["created_at"] < since:
                continue
            batch.append(fields)
            if len(batch) == REBUILD_BATCH:
                add_summed(summed(batch))
                read += len(batch)
                batch = []
        add_summed(summed(batch))
        read += len(batch)
        QualityUnit.objects.all().delete()
        units.insert_all(folded)
        placed = units.placed_sums(u for u in folded.values() if hour_of(u["last_at"]) >= since)
        add_summed({ArmHour: placed})
    return read
