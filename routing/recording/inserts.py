"""The one insert of decision rows, for the live write and the spool's drain alike.

Each row goes in with its conversation (routing.conversations.record), its
figures in the summary tables (routing.summaries.writes.add_to_summaries),
its budget reservation settled (routing.limits.ledger.settle), its stored
response written (routing.recording.stored.write) and the originals its
request's pinch took out kept for the recall tool (routing.recall.keeping), in
one transaction: a row the database already holds (a drain run again after its
commit, a journal entry whose request finished) is skipped, and so are its
conversation's update, its figures, its settlement, its stored response and its
originals, so a row written exactly once counts exactly once. The ids are the
router's (routing/recording/ids.py), so which rows are already there is one
look-up by primary key.
"""

import functools
import operator
from datetime import datetime

from django.db import connection, models, transaction
from django.db.backends.base.operations import BaseDatabaseOperations

from routing import conversations, db_writes
from routing.limits.ledger import HOLD_KEY, settle
from routing.models import RouteDecision
from routing.recall import keeping
from routing.recording import stored
from routing.recording.values import fit
from routing.summaries.writes import add_to_summaries

# What a row carries to its insert besides its columns: its budget reservation, its
# stored response, the originals for the recall tool.
RIDERS = (HOLD_KEY, stored.STORED_KEY, *keeping.FIELDS)
# A row's fields that are no column of its: the riders and its conversation's state.
EXTRAS = frozenset((*RIDERS, *conversations.STATE_FIELDS))


def insert_decisions(rows: list[dict], replayed: bool = True, config=None) -> list[dict]:
    """Insert the rows the database does not hold yet (by id), add each to its
    conversation and its figures to the summaries; returns the rows inserted, each
    with its id. Raises what the database raises.

    ``config``: the config whose prices the summaries take (the one the live write's
    request was served under); by default the one in force.

    ``replayed`` False: the rows' ids were reserved for them just now and their values
    fitted (the live write, routing/recording/decisions.py), so none can be there already
    and the look-up is spared: an id taken all the same (ids reset by hand) raises
    IntegrityError, as a new row would.
    """
    # Inside the caller's transaction when there is one, without a savepoint of its own.
    with transaction.atomic(savepoint=False):
        new = rows
        if replayed:
            ids = [row["id"] for row in rows if row.get("id") is not None]
            held = set(RouteDecision.objects.filter(id__in=ids).values_list("id", flat=True))
            new = [row for row in rows if row.get("id") is None or row["id"] not in held]
        # Fitted once, for the decision's columns and its conversation's alike (a live
        # row was, as it was finished: routing/recording/decisions.py). Each reader takes
        # the fields it knows, so the rows go on with their riders and state: copying
        # them without cost a live row 10 us.
        fitted = [fit(row) for row in new] if replayed else new
        if replayed or not _insert(fitted):
            columns = [{k: v for k, v in row.items() if k not in EXTRAS} for row in fitted]
            created = RouteDecision.objects.bulk_create([RouteDecision(**row) for row in columns])
            for row, decision in zip(new, created):
                row["id"] = decision.pk  # a row without one gets the database's
        conversations.record(fitted)
        add_to_summaries(fitted, config)
        # Each row's budget reservation is settled with it (routing/limits/ledger.py),
        # and its stored response written with it (routing/recording/stored.py).
        settle(new)
        stored.write(new)
        # And the originals pinch took out, for the recall tool (routing/recall/keeping.py).
        keeping.keep(new)
    return new


def _insert(rows: list[dict]) -> bool:
    """Insert rows that have their ids and only known columns (and ``EXTRAS``) with one
    statement written out once (``_insert_sql``), run once for all of them
    (``executemany``); False, inserting nothing, for any other rows.

    Each value is prepared as its field's ``get_db_prep_save`` prepares it, as
    ``bulk_create`` does; building the model instances and the statement cost 0.4-0.5 ms
    a request, and calling ``get_db_prep_save`` on each of the 63 columns 0.1 ms more
    (``_Columns``). A batch's rows (routing/recording/writer.py) go in one call through
    Django's cursor, its wrappers paid once, not once a row.
    """
    columns = _columns(connection.vendor)
    if not all(row.get("id") is not None and row.keys() <= columns.known for row in rows):
        return False
    params = [columns.values(row) for row in rows]
    with db_writes.cursor() as cursor:
        if len(params) == 1:  # a request's own row: a plain statement
            cursor.execute(_insert_sql(connection.vendor), params[0])
        elif params:
            cursor.executemany(_insert_sql(connection.vendor), params)
    return True


# Fields whose ``get_db_prep_save`` gives back a value of the field's own type unchanged
# (``to_python`` of a str, a bool, a float), on every backend: the values of a fitted
# row (routing/recording/values.py) are of those types already.
_UNCHANGED = (models.CharField, models.TextField, models.BooleanField, models.FloatField)


class _Columns:
    """What takes a fitted row to the decision table's values, in the table's column order.

    A value of an ``_UNCHANGED`` field (and of an integer field, where the backend adapts
    no integer) is the row's own, taken with the others at once (``operator.itemgetter``);
    a column the row lacks takes its default, prepared once (``fresh``: made again for
    each row, a ``list``); the others go through their field (``prepared``).
    """

    def __init__(self, fields, ops):
        self.names = frozenset(f.attname for f in fields)
        self.known = self.names | EXTRAS
        self.take = operator.itemgetter(*(f.attname for f in fields))
        self.defaults, self.prepared, self.fresh = {}, [], []
        # The backend adapts no integer (SQLite; PostgreSQL names each one's type).
        plain_integers = type(ops).adapt_integerfield_value is (
            BaseDatabaseOperations.adapt_integerfield_value
        )
        for index, field in enumerate(fields):
            name = field.attname
            if field.has_default() and callable(field.default):
                self.fresh.append((index, field))
                self.defaults[name] = None
            else:
                self.defaults[name] = field.get_db_prep_save(field.get_default(), connection)
            if isinstance(field, _UNCHANGED):
                continue
            slow = functools.partial(field.get_db_prep_save, connection=connection)
            if isinstance(field, models.IntegerField) and not field.primary_key:
                if plain_integers:
                    continue
                # An int or None: all IntegerField.get_db_prep_value leaves is the backend's.
                prepare = functools.partial(
                    ops.adapt_integerfield_value, internal_type=field.get_internal_type()
                )
            elif plain_integers and _integer_key(field):
                prepare = _when(int, lambda value: value, slow)  # the id, the key's id
            elif isinstance(field, models.DateTimeField):
                # An aware datetime (the row's time) is only the backend's to adapt.
                prepare = _when(datetime, ops.adapt_datetimefield_value, slow, aware=True)
            else:
                prepare = slow
            self.prepared.append((index, name, prepare))

    def values(self, row: dict) -> list:
        whole = self.names <= row.keys()
        values = list(self.take(row if whole else {**self.defaults, **row}))
        for index, name, prepare in self.prepared:
            if whole or name in row:
                values[index] = prepare(values[index])
        if not whole:
            for index, field in self.fresh:
                if field.attname not in row:
                    values[index] = field.get_db_prep_save(field.get_default(), connection)
        return values


def _integer_key(field) -> bool:
    """An integer primary key, or a foreign key to one: ``get_db_prep_save`` of an int is
    the backend's adaptation of it."""
    target = field.target_field if isinstance(field, models.ForeignKey) else field
    return target.primary_key and isinstance(target, models.IntegerField)


def _when(kind: type, fast, slow, aware: bool = False):
    """``fast`` for a value of type ``kind`` (a datetime with its zone, if ``aware``),
    ``slow`` for any other: the field's own preparation, of which ``fast`` is a part."""

    def prepare(value):
        if type(value) is kind and (not aware or value.utcoffset() is not None):
            return fast(value)
        return slow(value)

    return prepare


@functools.cache
def _columns(vendor: str) -> _Columns:
    return _Columns(RouteDecision._meta.concrete_fields, connection.ops)


@functools.cache
def _insert_sql(vendor: str) -> str:
    q = connection.ops.quote_name
    fields = RouteDecision._meta.concrete_fields
    columns = ", ".join(q(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    return f"INSERT INTO {q(RouteDecision._meta.db_table)} ({columns}) VALUES ({marks})"
