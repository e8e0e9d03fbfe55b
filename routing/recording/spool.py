"""The decision spool: finished rows the database could not take, kept on disk until it can.

A request that reached an upstream is paid for, so its row must exist in the
end. When the write fails (the database is locked, stopped, unreachable), the
row goes here: one JSON line appended to ``<ROUTER_DATA_DIR>/spool/decisions.jsonl``
and fsync'd before the answer is completed. ``drain()`` writes the spooled rows
to the database: the next request of any worker that wrote its own row calls
it when the spool is not empty, and so does ``manage.py drain_spool``.

Exactly once: every spooled row carries its id (routing/recording/ids.py, or
one reserved at drain time), and the drain inserts through the live write's
insert (routing/recording/inserts.py), which skips a row whose id exists and
its conversation's update with it, so a drain that stops between its commit
and removing its file writes nothing twice when the next one runs. Draining
first renames the spool (under an flock that appends also take, so no append
lands in a file being drained), then writes it, then deletes it; a leftover ``draining-*`` file from
a drain that died is picked up by the next. One drainer at a time across
processes: a drain holds ``drain.lock`` for its whole run, and a worker that
finds it taken leaves the work to its holder (two drainers of one file once
gave a row without an id a different id in each: 442 rows for 362 requests).

A row the database refuses for one of its values (it should not happen: the
values are fitted to their columns first, routing/recording/values.py) goes
to ``rejected.jsonl`` with the database's reason, and the drain goes on with
the rows after it. Each line names the database it was spooled for
(``_database``: engine, host, port, name; never a password): a router pointed
at another database sets such rows aside instead of writing them there.
"""

import errno
import fcntl
import functools
import logging
import os
import threading
import time
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import orjson
from django.conf import settings
from django.db import DatabaseError, DataError, IntegrityError, connection, transaction
from django.db import Error as DatabaseFailure

from routing.db_writes import request_write
from routing.models import ApiKey
from routing.recording import journal, room, stored
from routing.recording.inserts import insert_decisions
from routing.recording.values import fit

log = logging.getLogger(__name__)

SPOOL_NAME = "decisions.jsonl"
# Rows (or cut lines) the database will never take: kept for a person, never drained.
REJECTED_NAME = "rejected.jsonl"
DRAIN_LOCK_NAME = "drain.lock"
DRAIN_BATCH = 500
# What an id adds to a line, at most: "null" becomes up to 19 digits.
ID_ROOM = 16
# A spooled line's own keys, not RouteDecision columns.
DATABASE_KEY = "_database"
REASON_KEY = "_rejected_reason"
# What a line is stamped with as it is encoded: its time as text, its database.
STAMP_KEYS = ("created_at", DATABASE_KEY)
# What a database refuses a row for because of one of its values (as opposed
# to being unavailable, which stops the drain): constraint, range, length, NUL.
REFUSED_VALUE = (IntegrityError, DataError, ValueError, OverflowError, TypeError)

LEFTOVER_CHECK_SECONDS = 10.0

_drain_lock = threading.Lock()
_leftovers_checked_at = -LEFTOVER_CHECK_SECONDS


def spool_dir() -> Path:
    return _spool_dir(settings.DATA_DIR)


@functools.lru_cache(maxsize=8)
def _spool_dir(data_dir) -> Path:
    """Built once per data folder: asked three times a request (room, journal, pending)."""
    return Path(data_dir) / "spool"


@contextmanager
def _flock():
    directory = spool_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "spool.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield directory
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def database_identity() -> str:
    """Which database rows are written to: engine, host, port, name (no credentials)."""
    settings_dict = connection.settings_dict
    parts = [
        connection.vendor,
        settings_dict.get("HOST") or "",
        str(settings_dict.get("PORT") or ""),
    ]
    return ":".join([*parts, str(settings_dict.get("NAME") or "")])


def room_line(fields: dict) -> bytes:
    """A row as kept in a room file: a row without an id has room for one after it (the
    drain writes it in place, the line's length unchanged)."""
    line = encode_row(fields)
    return line if fields.get("id") is not None else line[:-1] + b" " * ID_ROOM + b"\n"


def encode_row(fields: dict) -> bytes:
    # Fitted (routing/recording/values.py) as the row will be written; the line's own keys
    # are no columns, and fit keeps them as they are.
    return encode_fitted(fit(fields))


def encode_fitted(line: dict, stamp: dict | None = None) -> bytes:
    """``encode_row`` of a row already fitted (a new dict: it is changed here), without
    fitting it again: a decision's journal lines, on the request's path. ``stamp``: the
    ``STAMP_KEYS`` of its opening line, for its finished line (not worked out twice: the
    database's identity alone took 3 us)."""
    if stamp is not None:
        line.update(stamp)
    else:
        line["created_at"] = line["created_at"].isoformat()
        line.setdefault(DATABASE_KEY, database_identity())
    # OPT_PASSTHROUGH_BIG_INT would fail on a huge count: fitted, none is left.
    return orjson.dumps(line) + b"\n"


def decode_row(line: bytes) -> dict:
    fields = orjson.loads(line)
    fields["created_at"] = datetime.fromisoformat(fields["created_at"])
    return fields


def _columns(fields: dict) -> dict:
    return {k: v for k, v in fields.items() if k not in (DATABASE_KEY, REASON_KEY)}


def spool(fields: dict) -> None:
    """Append one finished row and fsync it; raises OSError if even the disk refuses."""
    data = encode_row(fields)
    with _flock() as directory:
        fd = os.open(directory / SPOOL_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            # The leading newline ends a line an earlier append left cut short,
            # so this row is never glued to it (empty lines are skipped).
            _append_whole(fd, b"\n" + data)
            os.fsync(fd)
        finally:
            os.close(fd)
    log.warning("decision_spooled id=%s", fields.get("id"))


def _append_whole(fd: int, data: bytes) -> None:
    """Append all of ``data`` or none of it; OSError when the disk cannot take it.

    A full disk first takes part of a write without an error (os.write returns
    less): left there, that part is a row cut short, and the row was taken
    for spooled. The appends share the spool's flock, so cutting back to the
    size before is safe.
    """
    before = os.fstat(fd).st_size
    written = 0
    try:
        while written < len(data):
            taken = os.write(fd, data[written:])
            if not taken:
                raise OSError(errno.ENOSPC, "the spool's disk took no more bytes")
            written += taken
    except OSError:
        os.ftruncate(fd, before)
        raise


def pending() -> bool:
    """Is anything waiting in the spool? A stat, cheap enough to ask after every write.

    Files a dead drain left behind are looked for at most every
    ``LEFTOVER_CHECK_SECONDS`` (a directory listing is not free).
    """
    global _leftovers_checked_at
    directory = spool_dir()
    if room.holds_rows(directory):
        return True
    try:
        if (directory / SPOOL_NAME).stat().st_size > 0:
            return True
    except OSError:
        pass
    now = time.monotonic()
    if now - _leftovers_checked_at < LEFTOVER_CHECK_SECONDS:
        return False
    _leftovers_checked_at = now
    if not directory.is_dir():
        return False
    # A journal other than this process's may be a dead worker's (drain finds out); a
    # room file may hold rows any process can drain.
    own = f"inflight-{os.getpid()}.jsonl"
    return (
        any(directory.glob("draining-*.jsonl"))
        or any((directory / name).exists() for name in stored.OLDER_SPOOL_NAMES)
        or any(path.name != own for path in directory.glob("inflight-*.jsonl"))
        or room.waiting(directory)
    )


def _take_spool() -> list[Path]:
    """Rename the live spool aside and return every file there is to drain."""
    with _flock() as directory:
        live = directory / SPOOL_NAME
        if live.exists() and live.stat().st_size > 0:
            live.rename(directory / f"draining-{time.time_ns()}-{os.getpid()}.jsonl")
        return sorted(directory.glob("draining-*.jsonl"))


def without_stale_key(fields: dict) -> dict | None:
    """The row with its API key dropped when that key was deleted meanwhile, else None.

    The key's foreign key is the one constraint a finished row can break
    besides its id (``on_delete=SET_NULL`` could not reach a row not yet
    written); left alone, such a row would stop every later drain.
    """
    key_id = fields.get("api_key_id")
    if key_id is None or ApiKey.objects.filter(pk=key_id).exists():
        return None
    return {**fields, "api_key_id": None}


def _insert(rows: list[dict]) -> None:
    # A transaction (a savepoint inside one) of its own: a refused batch is rolled back
    # whole, and the rows are tried again one by one.
    with request_write(), transaction.atomic():
        insert_decisions([_columns(fields) for fields in rows])


def _write(rows: list[dict]) -> None:
    here = database_identity()
    for start in range(0, len(rows), DRAIN_BATCH):
        batch = []
        for fields in rows[start : start + DRAIN_BATCH]:
            spooled_for = fields.get(DATABASE_KEY, here)
            if spooled_for != here:
                _reject(fields, f"spooled for the database {spooled_for}, not {here}")
            else:
                batch.append(fields)
        try:
            _insert(batch)
        except REFUSED_VALUE:
            # One row has a value the database refuses: write the others one by one.
            for fields in batch:
                _insert_alone(fields)


def _insert_alone(fields: dict) -> None:
    try:
        _insert([fields])
    except REFUSED_VALUE as error:
        fixed = without_stale_key(fields) if isinstance(error, IntegrityError) else None
        if fixed is None:
            _reject(fields, f"{type(error).__name__}: {error}")
            return
        try:
            _insert([fixed])
        except REFUSED_VALUE as again:
            _reject(fields, f"{type(again).__name__}: {again}")


def _reject(fields: dict, reason: str) -> None:
    """Keep a row the database will never take apart, with why, for a person to look at.

    Nothing the router writes should get here; it is what keeps one bad row
    from stopping every later drain.
    """
    log.error("spooled_decision_rejected id=%s reason=%s", fields.get("id"), reason[:300])
    _set_aside(encode_row({**fields, REASON_KEY: reason[:1000]}))


def _set_aside(line: bytes) -> None:
    with open(spool_dir() / REJECTED_NAME, "ab") as handle:
        handle.write(line)


def drain(raise_errors: bool = False) -> int:
    """Write every spooled row to the database; returns how many rows it took from the spool.

    Stops at the first database error, leaving the rest for later (and
    raising it if asked). One drain runs at a time, in a process (a thread
    lock) and across processes (``drain.lock``): a request finding another
    process draining goes on at once; ``manage.py drain_spool`` waits its turn.
    """
    if not _drain_lock.acquire(blocking=not raise_errors):
        return 0
    progress = {"rows": 0}
    try:
        with _drain_flock(wait=raise_errors) as mine:
            if mine:
                _drain_spool_files(progress)
                _drain_rooms(progress)
                progress["rows"] += stored.drain_older_spool(spool_dir())
                # Last, so that a finished row in the spool wins over its interrupted twin.
                _recover_journals(progress)
    except (DatabaseFailure, OSError) as error:
        # The database is away, or the disk full (a line set aside could not be written):
        # the files stay for the next drain.
        log.warning("spool_drain_stopped reason=%s: %s", type(error).__name__, error)
        if raise_errors:
            raise
    finally:
        _drain_lock.release()
    return progress["rows"]


@contextmanager
def _drain_flock(wait: bool):
    """Yield True holding the one drainer's lock, False when another process holds it."""
    directory = spool_dir()
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / DRAIN_LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _drain_spool_files(progress: dict) -> None:
    for path in _take_spool():
        try:
            lines = path.read_bytes().splitlines()
        except FileNotFoundError:
            continue  # another process drained it meanwhile
        rows = _decode_lines(lines)
        with_id = [row for row in rows if row.get("id") is not None]
        without_id = [row for row in rows if row.get("id") is None]
        _write(with_id)
        if without_id:
            # Give them ids first and save the file again: a drain that dies
            # after this commit must not insert them twice.
            _assign_ids(path, with_id, without_id)
            _write(without_id)
        path.unlink(missing_ok=True)
        progress["rows"] += len(rows)
        log.info("spool_drained rows=%d file=%s", len(rows), path.name)


def _decode_lines(lines: list[bytes]) -> list[dict]:
    """The rows of a file; a line cut short (the disk filled, the machine stopped) goes aside."""
    rows = []
    for line in lines:
        if not line.strip():
            continue
        try:
            rows.append(decode_row(line))
        except (ValueError, KeyError, TypeError):
            log.error("spooled_line_unreadable bytes=%d", len(line))
            _set_aside(line + b"\n")
    return rows


def _drain_rooms(progress: dict) -> None:
    """Write the rows kept in room files (routing/recording/room.py), of every process."""
    for path in room.files(spool_dir()):
        with room.taken(path) as kept:
            if not kept.data:
                continue
            rows, offset = [], 0
            for line in kept.data.splitlines(keepends=True):
                start, offset = offset, offset + len(line)
                (row,) = _decode_lines([line]) or [None]
                if row is None:
                    continue
                if row.get("id") is None:
                    # Its id first, saved in place (the line was padded for it): a drain
                    # that dies after its commit must not insert this row twice.
                    _give_ids([row])
                    with_id = encode_row(row)[:-1]
                    if len(with_id) >= len(line):
                        raise OSError(errno.EOVERFLOW, f"no room for an id in {path.name}")
                    kept.replace(start, with_id.ljust(len(line) - 1) + b"\n")
                rows.append(row)
            _write(rows)
            progress["rows"] += len(rows)
            log.info("room_drained rows=%d file=%s", len(rows), path.name)


def _recover_journals(progress: dict) -> None:
    for path, lines in journal.dead_journals(spool_dir()):
        rows = journal.final_rows(_decode_lines(lines))
        _write(rows)
        progress["rows"] += len(rows)
        if rows:
            log.warning("journal_recovered rows=%d file=%s", len(rows), path.name)


def _assign_ids(path: Path, with_id: list[dict], without_id: list[dict]) -> None:
    _give_ids(without_id)
    temporary = path.with_suffix(".tmp")
    temporary.write_bytes(b"".join(encode_row(row) for row in with_id + without_id))
    os.replace(temporary, path)


def _give_ids(rows: list[dict]) -> None:
    from routing.recording.ids import next_id

    for row in rows:
        if row.get("id") is None:
            row["id"] = next_id()
            if row["id"] is None:
                raise DatabaseError("no decision id could be reserved")
