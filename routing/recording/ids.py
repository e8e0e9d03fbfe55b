"""Decision ids handed out before the row is written, reserved from the database in blocks.

A decision row is written once, when the answer ends (routing/recording/decisions.py),
but its id goes out first, in the ``X-Router-Decision-Id`` header of a stream,
and with the row into the spool when the database cannot take it (where the
id is what makes the later write happen exactly once). So each process
reserves ids ``BLOCK`` at a time from the table's own counter: PostgreSQL's
sequence, SQLite's ``sqlite_sequence`` row (the table is AUTOINCREMENT, so a
row inserted without an id never takes a reserved one). One reservation, a
single short statement, serves a block of requests, sized to last about
``BLOCK_SECONDS`` at the pace the last block went: ``BLOCK`` at least (a
worker's first, an idle worker's), ``MAX_BLOCK`` at most. On SQLite a
reservation waits for the write lock the worker's writer holds in its batches:
served at 1 client, the 64-id blocks of a busy worker took 2% of its request
thread; a block that lasts a second costs it next to nothing. A worker that stops
leaves its block's unused ids as gaps: at most ``MAX_BLOCK``, ``BLOCK`` if it was
not busy.

When the database cannot reserve, ``next_id`` returns None: the row is then
written (or spooled) without an id and gets one from the database later.
"""

import logging
import threading
import time
from collections import deque

from django.db import Error as DatabaseFailure
from django.db import connection, transaction

from routing.db_writes import request_write
from routing.models import RouteDecision

log = logging.getLogger(__name__)

BLOCK = 64
MAX_BLOCK = 1024
BLOCK_SECONDS = 1.0
# A reservation is worth less than the answer: give up sooner than the row's own write.
RESERVE_WAIT_SECONDS = 0.5

_lock = threading.Lock()
_ids: deque[int] = deque()
# The size of the last block reserved, and when (time.monotonic()).
_block = {"size": BLOCK, "at": None}


def _reserve(count: int) -> list[int]:
    table = RouteDecision._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                [table, count],
            )
            return [row[0] for row in cursor.fetchall()]
        if connection.vendor == "sqlite":
            with request_write(RESERVE_WAIT_SECONDS), transaction.atomic():
                cursor.execute(
                    "INSERT INTO sqlite_sequence (name, seq) "
                    f'SELECT %s, COALESCE(MAX(id), 0) FROM "{table}" '
                    "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = %s)",
                    [table, table],
                )
                cursor.execute(
                    "UPDATE sqlite_sequence SET seq = seq + %s WHERE name = %s RETURNING seq",
                    [count, table],
                )
                last = cursor.fetchall()[0][0]  # fetchall: the statement must finish before COMMIT
            return list(range(last - count + 1, last + 1))
    return []


def next_id() -> int | None:
    """A decision id no other row has or will get, or None if none can be reserved now."""
    with _lock:
        if not _ids:
            now = time.monotonic()
            size = BLOCK
            if _block["at"] is not None and now > _block["at"]:
                paced = int(_block["size"] * BLOCK_SECONDS / (now - _block["at"]))
                size = min(max(paced, BLOCK), MAX_BLOCK)
            try:
                _ids.extend(_reserve(size))
                _block.update(size=size, at=now)
            except DatabaseFailure as error:
                log.warning("decision_ids_unavailable reason=%s: %s", type(error).__name__, error)
                return None
        return _ids.popleft() if _ids else None


def forget_reserved_ids() -> None:
    """Drop this process's unused reserved ids (a test database was rolled back)."""
    with _lock:
        _ids.clear()
        _block.update(size=BLOCK, at=None)
