"""Room on the spool's disk, set aside before the upstream call for the row it will owe.

A row is owed once an upstream is called, and the spool is where it goes when
the database cannot take it. Checking the disk afterwards is too late: on a
16 MB filesystem filled under load, 39 of 147 answered requests had no row and
11 of 39 stored responses were missing, and a worker flipped between refusing
and accepting 13 times because its probe (a decision id reserved from the
database) passed while inserts failed (issue 43). So each process keeps a
file of room, ``<spool>/room-<pid>``, allocated on the disk
(``posix_fallocate``: blocks, not a sparse hole) as large as the rows of its
requests in flight may need. A request promises its row's size before its
upstream call; a promise the disk cannot back (the file cannot grow) refuses
the request there, 503 ``recording_unavailable``, before anything is paid.

When a promised row must be spooled and the spool's own file cannot take it
(the disk is full), the row is written in place into the room file, at the
end of the rows kept there, inside blocks that are already the file's: no
other writer on the disk can take them. Giving the blocks back to the
filesystem and appending to the spool instead lost rows: SQLite's journal
took the freed blocks first (one run of the full-disk test: 644 rows for 647
answered requests). The room file is thus a spool segment too: its rows
at its start, one JSON line each, zeros after them (JSON has no zero byte).
Any process's drain (routing/recording/spool.py, under the drain lock) takes
a file's rows with ``taken``, live or dead: a ``lockf`` that ``keep`` takes
too keeps the owner from adding a row meanwhile; once they are written, their
bytes are zeroed (the file keeps its blocks: room again) and a dead process's
file (its flock can be taken) is removed. The owner finds where its rows end
from the file itself, so a drain by another process needs no word with it.

The file is as large as the most rows a process had in flight at once (a few
hundred KB for 16 threads) plus the rows kept in it; it never shrinks
otherwise, so a steady load costs no system call.

A promise is the row's encoded size when it opens, plus ``ANSWER_BYTES`` for
what the answer adds (status, attempts, usage, error) and the prompt's bytes
again for a stored response (routing/recording/stored.py) that may ride with it.
"""

import errno
import fcntl
import logging
import os
import threading
from contextlib import contextmanager, nullcontext
from pathlib import Path

log = logging.getLogger(__name__)

# What an answer adds to its row (error text, attempts, usage), and its stored
# response's output: generous, as a short promise is a row that may not fit.
ANSWER_BYTES = 64 * 1024
# Grown by at least this much at once: a steady load never calls fallocate.
GROW_BYTES = 256 * 1024
PREFIX = "room-"

_lock = threading.Lock()
# size: bytes allocated; kept: bytes of rows written in place; promised: room of rows in flight.
_state = {
    "pid": None,
    "fd": None,
    "directory": None,
    "path": None,
    "size": 0,
    "kept": 0,
    "promised": 0,
}


def _file(directory: Path) -> int:
    """This process's room file, created and locked on first use (and after a fork)."""
    pid = os.getpid()
    if _state["fd"] is not None and _state["pid"] == pid and _state["directory"] == directory:
        return _state["fd"]
    path = directory / f"{PREFIX}{pid}"
    if _state["fd"] is not None:
        # After a fork the lock stays with the parent's copy; closing ours is safe.
        os.close(_state["fd"])
    directory.mkdir(parents=True, exist_ok=True)
    _sweep(directory)
    # Locked before it has its name: a drainer finding a room file it can lock may take it.
    making = directory / f".{PREFIX}{pid}"
    fd = os.open(making, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    # Held while the process lives: a room file whose lock can be taken is a dead one's.
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.replace(making, path)
    _state.update(pid=pid, fd=fd, directory=directory, path=path, size=0, kept=0, promised=0)
    return fd


def _grow(fd: int, needed: int) -> None:
    if needed > _state["size"]:
        size = max(needed, _state["size"] + GROW_BYTES)
        os.posix_fallocate(fd, 0, size)
        _state["size"] = size


def promise(directory: Path, nbytes: int) -> bool:
    """Set ``nbytes`` aside for a row; False when the disk cannot back the promise."""
    with _lock:
        try:
            fd = _file(directory)
            wanted = _state["promised"] + nbytes
            _grow(fd, _state["kept"] + wanted)
        except OSError as error:
            log.warning("spool_room_unavailable bytes=%d reason=%s", nbytes, error)
            return False
        _state["promised"] = wanted
        return True


def release(nbytes: int) -> None:
    """The row is written (or lost): its room is for the next request."""
    with _lock:
        _state["promised"] = max(_state["promised"] - nbytes, 0)


def keep(line: bytes, promised: int) -> None:
    """Write a spooled row (``line``, one JSON line) into the room its request was promised.

    The promise is spent (no ``release`` after this). Raises OSError when the
    row is larger than its room and the file cannot grow (the disk is full).
    """
    with _lock:
        fd = _state["fd"]
        if fd is None or _state["pid"] != os.getpid():
            raise OSError(errno.ENOSPC, "no room was promised for this row")
        # A drain (of any process) may have emptied the file since: its rows say where they end.
        fcntl.lockf(fd, fcntl.LOCK_EX)
        try:
            kept = _rows_end(fd)
            others = max(_state["promised"] - promised, 0)
            _state["kept"] = kept
            _grow(fd, kept + len(line) + others)
            if os.pwrite(fd, line, kept) != len(line):
                raise OSError(errno.ENOSPC, "the room file took part of the row")
            os.fdatasync(fd)
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN)
        _state["kept"] = kept + len(line)
        _state["promised"] = others
    log.warning("decision_kept_in_room bytes=%d", len(line))


def holds_rows(directory: Path) -> bool:
    """Did this process keep rows in its room file in ``directory``? (No system call; a
    drain of another process may have taken them already.)"""
    path = _state["path"]
    return _state["kept"] > 0 and _state["pid"] == os.getpid() and path.parent == directory


def _rows_end(fd: int) -> int:
    """Where the rows at the start of a room file end: its first zero byte (JSON has none)."""
    data = os.pread(fd, os.fstat(fd).st_size, 0)
    end = data.find(b"\0")
    return len(data) if end < 0 else end


def waiting(directory: Path) -> bool:
    """Does any room file in ``directory`` hold rows? (Its first byte is not zero.)"""
    for path in directory.glob(f"{PREFIX}*"):
        try:
            with open(path, "rb") as handle:
                if handle.read(1) not in (b"", b"\0"):
                    return True
        except OSError:
            continue
    return False


class Rows:
    """The rows of a room file, taken for a drain (see ``taken``)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.data = b"" if os.pread(fd, 1, 0) in (b"", b"\0") else os.pread(fd, _rows_end(fd), 0)

    def replace(self, offset: int, line: bytes) -> None:
        """Put ``line`` in place of a row of the same length (given its id), synced."""
        os.pwrite(self.fd, line, offset)
        os.fdatasync(self.fd)


@contextmanager
def taken(path: Path):
    """Yield the rows of a room file, of this process or another, live or dead, with no
    writer adding to it; once the caller has written them, they are zeroed (room again)
    and a dead process's file is removed. A caller that raises leaves them there."""
    own = path == _state["path"] and _state["pid"] == os.getpid()
    with _lock if own else nullcontext():
        fd = _state["fd"] if own else os.open(path, os.O_RDWR)
        try:
            dead = not own and _unlocked(fd)
            # A lock on the rows (lockf; the file's flock says its process lives): ``keep``
            # takes it too. Closing another descriptor of this file would drop it, so the
            # owner's drain uses the owner's descriptor.
            fcntl.lockf(fd, fcntl.LOCK_EX)
            try:
                rows = Rows(fd)
                yield rows
                if rows.data:
                    os.pwrite(fd, b"\0" * len(rows.data), 0)
                    os.fdatasync(fd)
                if own:
                    _state["kept"] = 0
                if dead:
                    path.unlink(missing_ok=True)
            finally:
                fcntl.lockf(fd, fcntl.LOCK_UN)
        finally:
            if not own:
                os.close(fd)


def files(directory: Path) -> list[Path]:
    return sorted(directory.glob(f"{PREFIX}*"))


def _unlocked(fd: int) -> bool:
    """Is the file's process gone (its flock can be taken, and is now ours)?"""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _sweep(directory: Path) -> None:
    """Remove the room files of processes that are gone and hold no rows: free disk again
    (one holding rows is the drain's)."""
    for path in directory.glob(f"{PREFIX}*"):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            if _unlocked(fd) and os.pread(fd, 1, 0) in (b"", b"\0"):
                path.unlink(missing_ok=True)
        except OSError:
            pass
        finally:
            os.close(fd)
