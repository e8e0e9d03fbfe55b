"""Decision rows written behind the answer: one thread per served worker writes them in batches.

The row's transaction (the row, its conversation, its units, the summaries,
the budget settled: routing/recording/inserts.py) was the largest stage of a
request, 1.2-1.7 ms of it on the 2-core machine (bench/bench_stages.py), paid
before the answer went out. A served worker (gunicorn, started by
router_project/gunicorn.conf.py's ``post_fork``) runs this writer instead:
``finish_decision`` completes the row, notes its final line in the journal
(routing/recording/journal.py: a worker killed now still leaves the row as it
ended) and queues it here; once a row is queued the thread waits until
``BATCH_ROWS`` are, or the oldest has waited ``WAIT_SECONDS``, and writes
them in one transaction (routing/recording/decisions.py, ``write_batch``).
Written at once, each row's transaction ran beside the worker's next request
and fought it for the GIL; collected, one transaction serves several
requests. Where no writer runs (the Django test client, management commands,
``runserver``), and for a row a reader may need at once (a stored response,
which the client's next request may name on any worker), the row is written
on the request's thread as before.

Bounded: past ``MAX_BACKLOG`` rows, or ``MAX_BACKLOG_BYTES``, queued,
``submit`` refuses and the request writes its own row (today's cost, which
is what slows a load the database cannot keep up with). 256 is four batches:
about 0.1 s of writing on SQLite here, so a reader (the dashboard, another
worker's conversation state, a recall on another worker:
routing/recall/store.py) is normally at most ``WRITTEN_WITHIN_SECONDS``
behind, and the worker's graceful exit writes it well inside gunicorn's 30 s.

A graceful exit (SIGTERM, a ``max_requests`` restart) stops the writer from
gunicorn's ``worker_exit`` hook: the wait is cut short, what is queued is
written before the process ends, and any row finished after that is written
by its own thread.
"""

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable

from django.db import close_old_connections, connections

log = logging.getLogger(__name__)

# Rows a transaction takes: the batch's summary and unit upserts are grouped, so a
# larger batch saves little more, and keeps the write lock longer.
BATCH_ROWS = 64
# Rows queued at most (see the docstring); past it a request writes its own.
MAX_BACKLOG = 4 * BATCH_ROWS
# Bytes of rows (their journal lines) queued at most: a row with recall originals
# holds what pinch took out of its request, up to a whole payload's tool results.
MAX_BACKLOG_BYTES = 32 * 1024 * 1024
# How long the oldest queued row waits for others before its batch is written. A
# write per row ran beside the next request and fought it for the GIL on 2 cores:
# waiting cut the router's p50 at 1 client by about 0.9 ms (2 KB) and 1-1.8 ms
# (368 KB), the same for 0.05, 0.1 and 0.25 s within the noise (served A/B, 10 rounds
# alternated): the shortest, as a reader sees a row that much later (plus its write).
WAIT_SECONDS = 0.05
# A row queued is written within this (its wait, the batch in front of it and its
# own): how long a reader elsewhere may have to wait for it (routing/recall/store.py).
WRITTEN_WITHIN_SECONDS = WAIT_SECONDS + 0.25
# How long a graceful exit waits for the queue to be written.
STOP_SECONDS = 20.0

_cond = threading.Condition()
# (queued at: time.monotonic(), row, its bytes), oldest first.
_queue: deque = deque()
# pid: the process the thread runs in (a fork has none); busy: rows taken, not yet
# written; bytes: those of the rows queued or busy.
_state = {"pid": None, "thread": None, "stopping": False, "busy": 0, "bytes": 0}


def start(write_batch: Callable[[list], None]) -> None:
    """Run this process's writer thread, calling ``write_batch`` with each batch taken."""
    with _cond:
        if _state["pid"] == os.getpid():
            return
        _queue.clear()
        thread = threading.Thread(
            target=_run, args=(write_batch,), name="decision-writer", daemon=True
        )
        _state.update(pid=os.getpid(), thread=thread, stopping=False, busy=0, bytes=0)
    thread.start()


def running() -> bool:
    """Does this process have a writer taking rows?"""
    return _state["pid"] == os.getpid() and not _state["stopping"]


def submit(item, size: int = 0) -> bool:
    """Queue a finished row (``size``: its bytes) for the writer; False when none runs here
    or its backlog is full: the caller writes the row itself."""
    with _cond:
        if not running() or len(_queue) >= MAX_BACKLOG:
            return False
        if _state["bytes"] + size > MAX_BACKLOG_BYTES:
            return False
        _queue.append((time.monotonic(), item, size))
        _state["bytes"] += size
        # Woken for the first row (its wait starts) and for a full batch; the rows
        # between join the wait without waking the thread.
        if len(_queue) == 1 or len(_queue) >= BATCH_ROWS:
            _cond.notify()
    return True


def backlog() -> int:
    """Rows queued or being written."""
    with _cond:
        return len(_queue) + _state["busy"]


def stop(timeout: float = STOP_SECONDS) -> None:
    """Write what is queued at once, then end the thread (a worker's graceful exit)."""
    with _cond:
        if _state["pid"] != os.getpid():
            return
        _state["stopping"] = True
        _cond.notify_all()
        thread = _state["thread"]
    thread.join(timeout)
    if thread.is_alive():
        log.error("decision_writer_stop_timeout queued=%d", backlog())
        return
    with _cond:
        _state.update(pid=None, thread=None)


def _due() -> bool:
    """Is the queue's next batch to be written now? Called holding ``_cond``."""
    return (
        len(_queue) >= BATCH_ROWS
        or _state["stopping"]
        or time.monotonic() - _queue[0][0] >= WAIT_SECONDS
    )


def _run(write_batch: Callable[[list], None]) -> None:
    while True:
        with _cond:
            while not _queue and not _state["stopping"]:
                _cond.wait()
            if not _queue:
                # Stopping, and everything is written: the thread's connection goes with it.
                connections.close_all()
                return
            while not _due():
                _cond.wait(WAIT_SECONDS - (time.monotonic() - _queue[0][0]))
            taken = [_queue.popleft() for _ in range(min(len(_queue), BATCH_ROWS))]
            _state["busy"] = len(taken)
        try:
            write_batch([item for _, item, _ in taken])
        except Exception:  # write_batch spools what it cannot write; this is a bug's last net
            log.exception("decision_writer_failed rows=%d", len(taken))
        finally:
            # As at a request's end: a connection an error left unusable, or past its
            # CONN_MAX_AGE, is replaced at the next batch.
            close_old_connections()
            with _cond:
                _state["busy"] = 0
                _state["bytes"] -= sum(size for _, _, size in taken)
                _cond.notify_all()
