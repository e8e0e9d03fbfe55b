"""Whether this worker can still record a decision, and refusing requests when it cannot.

A request that reaches an upstream is paid for and must end with a row. When
both the database and the spool refuse a row (the database locked or down
and the spool's disk full or read-only), that row is lost, and so would be
every next one: answering them anyway spends the operator's money with no
trace. So a lost row marks this worker unable to record, and until a probe
finds the database or the spool writable again, new requests are refused
before any upstream call (503 ``recording_unavailable``, in the client's
shape), unless the operator chose ``routing.serve_unrecorded: true``.
``/metrics`` shows it as ``router_recording_available``.

The probe runs at most every ``PROBE_SECONDS``: a 64 KB write to the spool
folder, fsync'd and removed (a disk with room for a row has room for it), or
else a decision id reserved from the database (on SQLite that takes the write
lock, so it says whether a row would go in).
"""

import logging
import os
import threading
import time

from routing.errors import RouterError
from routing.recording import ids, spool

log = logging.getLogger(__name__)

PROBE_SECONDS = 1.0
PROBE_BYTES = 64 * 1024

_lock = threading.Lock()
_state = {"lost_at": None, "probed_at": 0.0}


def row_lost() -> None:
    """A row reached neither the database nor the spool."""
    with _lock:
        if _state["lost_at"] is None:
            _state["lost_at"] = time.time()
            log.error("recording_unavailable: new requests are refused until a row can be kept")


def row_kept() -> None:
    """A row reached the database or the spool."""
    if _state["lost_at"] is not None:
        with _lock:
            _state["lost_at"] = None
        log.warning("recording_available again")


def available() -> bool:
    """Can this worker keep a row now? True unless a row was lost and no probe has passed since."""
    if _state["lost_at"] is None:
        return True
    with _lock:
        now = time.monotonic()
        if now - _state["probed_at"] < PROBE_SECONDS:
            return False
        _state["probed_at"] = now
    if _spool_writable() or _database_writable():
        row_kept()
        return True
    return False


def require_recording(serve_unrecorded: bool) -> None:
    """Raise RouterError(503) when no row could be kept and the operator did not allow it."""
    if serve_unrecorded or available():
        return
    raise RouterError(
        503,
        "The router cannot record requests right now (its database and its spool both "
        "refuse writes), so it takes none: retry later. The operator can allow unrecorded "
        "requests with routing.serve_unrecorded: true.",
        "recording_unavailable",
    )


def _spool_writable() -> bool:
    path = spool.spool_dir() / f"probe-{os.getpid()}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b"\0" * PROBE_BYTES)
            os.fsync(fd)
        finally:
            os.close(fd)
            path.unlink(missing_ok=True)
    except OSError:
        return False
    return True


def _database_writable() -> bool:
    ids.forget_reserved_ids()
    return ids.next_id() is not None
