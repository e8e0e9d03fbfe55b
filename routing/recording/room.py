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
When a promised row must go to a full spool, the file gives its share back
(truncated and fsync'd, so the filesystem can hand those blocks out again)
and the row is written in its place. The file is as large as the most rows a
process had in flight at once (a few hundred KB for 16 threads); it never
shrinks otherwise, so a steady load costs no system call.

A promise is the row's encoded size when it opens, plus ``ANSWER_BYTES`` for
what the answer adds (status, attempts, usage, error) and the prompt's bytes
again for a stored response (routing/recording/stored.py) that may ride with it.
"""

import fcntl
import logging
import os
import threading
from pathlib import Path

log = logging.getLogger(__name__)

# What an answer adds to its row (error text, attempts, usage), and its stored
# response's output: generous, as a short promise is a row that may not fit.
ANSWER_BYTES = 64 * 1024
# Grown by at least this much at once: a steady load never calls fallocate.
GROW_BYTES = 256 * 1024

_lock = threading.Lock()
_state = {"pid": None, "fd": None, "path": None, "size": 0, "promised": 0}


def _file(directory: Path) -> int:
    """This process's room file, created and locked on first use (and after a fork)."""
    pid = os.getpid()
    path = directory / f"room-{pid}"
    if _state["fd"] is not None and _state["pid"] == pid and _state["path"] == path:
        return _state["fd"]
    directory.mkdir(parents=True, exist_ok=True)
    _sweep(directory)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    # Held while the process lives: a room file whose lock can be taken is a dead one's.
    fcntl.flock(fd, fcntl.LOCK_EX)
    _state.update(pid=pid, fd=fd, path=path, size=0, promised=0)
    return fd


def _sweep(directory: Path) -> None:
    """Remove the room files of processes that are gone: their room is free disk again."""
    for path in directory.glob("room-*"):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path.unlink(missing_ok=True)
        except OSError:
            pass  # its process is alive
        finally:
            os.close(fd)


def promise(directory: Path, nbytes: int) -> bool:
    """Set ``nbytes`` aside for a row; False when the disk cannot back the promise."""
    with _lock:
        try:
            fd = _file(directory)
            wanted = _state["promised"] + nbytes
            if wanted > _state["size"]:
                size = max(wanted, _state["size"] + GROW_BYTES)
                os.posix_fallocate(fd, 0, size)
                _state["size"] = size
        except OSError as error:
            log.warning("spool_room_unavailable bytes=%d reason=%s", nbytes, error)
            return False
        _state["promised"] = wanted
        return True


def release(nbytes: int) -> None:
    """The row is written (or lost): its room is for the next request."""
    with _lock:
        _state["promised"] = max(_state["promised"] - nbytes, 0)


def give_back(nbytes: int) -> None:
    """Free ``nbytes`` of the file on the disk for a row about to be spooled in their place."""
    with _lock:
        fd = _state["fd"]
        if fd is None or _state["pid"] != os.getpid():
            return
        size = max(_state["size"] - nbytes, 0)
        try:
            os.ftruncate(fd, size)
            # Freed blocks are the filesystem's again once this is on disk (ext4 keeps them
            # until its journal commits).
            os.fsync(fd)
        except OSError as error:
            log.warning("spool_room_not_freed reason=%s", error)
            return
        _state["size"] = size
