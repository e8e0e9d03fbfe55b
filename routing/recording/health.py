"""Whether this worker can still record a decision, and refusing requests when it cannot.

A request that reaches an upstream is paid for and must end with a row, so
each request sets room aside on the spool's disk for its row before its
upstream call (routing/recording/room.py), and is refused there when the disk
cannot back it: 503 ``recording_unavailable``, in the client's shape, unless
the operator chose ``routing.serve_unrecorded: true``. A row that still
reaches neither the database nor the spool (a spool folder turned read-only)
is lost, logged ``decision_lost``. Either marks this worker unable to record
until a probe passes, and ``/metrics`` shows it as
``router_recording_available``.

The probe runs at most every ``PROBE_SECONDS``: 64 KB of room promised on the
spool's disk and released (a disk with room for a row has room for it). Only
the disk is asked: a probe that reserved a decision id from the database
passed on a full SQLite disk while every insert failed, and the worker
flipped between refusing and accepting 13 times in 20 s (issue 43).
"""

import logging
import threading
import time

from routing.errors import RouterError
from routing.recording import room, spool

log = logging.getLogger(__name__)

PROBE_SECONDS = 1.0
PROBE_BYTES = 64 * 1024

_lock = threading.Lock()
_state = {"lost_at": None, "probed_at": 0.0}


def row_lost() -> None:
    """A row reached neither the database nor the spool, or could not be promised room."""
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
    if _spool_writable():
        row_kept()
        return True
    return False


def require_recording(serve_unrecorded: bool) -> None:
    """Raise RouterError(503) when no row could be kept and the operator did not allow it."""
    if serve_unrecorded or available():
        return
    raise recording_unavailable()


def recording_unavailable() -> RouterError:
    """The refusal of a request whose row could be kept nowhere; marks the worker so."""
    row_lost()
    return RouterError(
        503,
        "The router cannot record requests right now (its database and its spool's disk "
        "cannot take a row), so it takes none: retry later. The operator can allow unrecorded "
        "requests with routing.serve_unrecorded: true.",
        "recording_unavailable",
    )


def _spool_writable() -> bool:
    if not room.promise(spool.spool_dir(), PROBE_BYTES):
        return False
    room.release(PROBE_BYTES)
    return True
