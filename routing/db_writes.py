"""Database writes on the request path: a bounded wait, never a queue behind the busy handler.

A request must not wait 20 s (the SQLite connection's timeout, right for
admin and commands) for a lock held by another process: past the wait given
(``WAIT_SECONDS`` for a decision row) the write gives up and the caller spools
the decision instead. On SQLite the router's writers also take turns before
they reach SQLite: the threads of a process on a thread lock, the processes
on an flock of a file beside the database (polled every 0.2 ms). SQLite's own
busy handler backs off in sleeps of up to 100 ms, which is what put the
concurrency-16 p99 at 0.5-0.9 s when 32 threads of two workers raced for the
one write lock; taking turns first leaves the busy handler only programs
other than the router's workers to wait for.

The shorter busy timeout is set on a connection only when it changes (a
PRAGMA per write would be two statements more per request) and stays set, so
an admin write later on the same thread's connection waits as long.

``cursor`` is the cursor of the recording's own statements (the rows, their
conversations, their units and summaries): on SQLite, Django's cursor turns
each statement's ``%s`` into ``?`` with a regular expression every time it
runs one, tens of microseconds for a statement of 1-4 KB (a quarter of the
writer thread's time, py-spy, when each row ran its own); these statements
are a few texts, written out once, so each is turned once.
"""

import fcntl
import os
import threading
import time
from contextlib import contextmanager

from django.db import OperationalError, connection
from django.db.backends.sqlite3.base import SQLiteCursorWrapper

WAIT_SECONDS = 2.0
# How often a process waiting for another's write looks again: a write holds
# the lock for a fraction of a millisecond.
POLL_SECONDS = 0.0002

# Statement texts whose SQLite form is kept: the recording's are a few hundred at most
# (a form per row count), past which a new one is converted as Django converts it.
KEPT_STATEMENTS = 1024

_sqlite_lock = threading.Lock()
_lock_file_state = {"pid": None, "path": None, "fd": None}


def _set_busy_timeout(milliseconds: int) -> None:
    connection.ensure_connection()
    raw = connection.connection
    # Remembered on Django's wrapper, with the sqlite3 connection it was set on
    # (a reconnect makes a new one, back at the default).
    if getattr(connection, "router_busy_timeout", None) != (raw, milliseconds):
        raw.execute(f"PRAGMA busy_timeout = {milliseconds}")
        connection.router_busy_timeout = (raw, milliseconds)


def _lock_file() -> int:
    """A file beside the database whose flock the router's processes take turns on."""
    path = f"{connection.settings_dict['NAME']}.write-lock"
    state = _lock_file_state
    # Opened once per process (an flock is per open file, so never shared across a fork).
    if state["fd"] is None or state["pid"] != os.getpid() or state["path"] != path:
        state.update(fd=os.open(path, os.O_RDWR | os.O_CREAT, 0o600), pid=os.getpid(), path=path)
    return state["fd"]


def _flock(fd: int, deadline: float) -> bool:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_SECONDS)


@contextmanager
def request_write(wait: float = WAIT_SECONDS):
    """Run the block's writes waiting at most ``wait`` seconds; past it, raise OperationalError."""
    if connection.vendor != "sqlite":
        yield
        return
    deadline = time.monotonic() + wait
    if not _sqlite_lock.acquire(timeout=wait):
        raise OperationalError("database is locked (another thread of this process waited)")
    try:
        fd = _lock_file()
        if not _flock(fd, deadline):
            raise OperationalError("database is locked (another router process waited)")
        try:
            # Only other programs (admin, a command, a shell) can still hold the
            # database's lock now; their wait is bounded by the same figure.
            _set_busy_timeout(int(wait * 1000))
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        _sqlite_lock.release()


class _Cursor(SQLiteCursorWrapper):
    """Django's SQLite cursor, but each statement text's ``?`` form kept once made."""

    converted: dict[str, str] = {}

    def convert_query(self, query, *, param_names=None):
        if param_names is not None:
            return super().convert_query(query, param_names=param_names)
        converted = self.converted.get(query)
        if converted is None:
            converted = super().convert_query(query)
            if len(self.converted) < KEPT_STATEMENTS:
                self.converted[query] = converted
        return converted


def cursor():
    """``connection.cursor()`` for statements whose texts are written out once (the module's
    doc); any other database's own cursor."""
    if connection.vendor != "sqlite":
        return connection.cursor()
    # As Django makes its cursor (BaseDatabaseWrapper._cursor), of this class.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        return connection._prepare_cursor(connection.connection.cursor(factory=_Cursor))
