"""Decision rows written behind the answer: one thread per served worker writes them in batches.

The row's transaction (the row, its conversation, its units, the summaries,
the budget settled: routing/recording/inserts.py) was the largest stage of a
request, 1.2-1.7 ms of it on the 2-core machine (bench/bench_stages.py), paid
before the answer went out. A served worker (gunicorn, started by
router_project/gunicorn.conf.py's ``post_fork``) runs this writer instead:
``finish_decision`` completes the row, notes its final line in the journal
(routing/recording/journal.py: a worker killed now still leaves the row as it
ended) and queues it here; the thread takes what is queued, up to
``BATCH_ROWS``, and writes it in one transaction (routing/recording/decisions.py,
``write_batch``). Where no writer runs (the Django test client, management
commands, ``runserver``), and for a row a reader may need at once (a stored
response, which the client's next request may name on any worker), the row
is written on the request's thread as before.

Bounded: past ``MAX_BACKLOG`` rows queued, ``submit`` refuses and the request
writes its own row (today's cost, which is what slows a load the database
cannot keep up with). 256 is four batches: about 0.1 s of writing on SQLite
here, so a reader (the dashboard, another worker's conversation state) is at
most that much behind, the worker's graceful exit writes it well inside
gunicorn's 30 s, and the memory it holds stays a few MB (a row with its
recall originals may be tens of KB).

A graceful exit (SIGTERM, a ``max_requests`` restart) stops the writer from
gunicorn's ``worker_exit`` hook: what is queued is written before the
process ends, and any row finished after that is written by its own thread.
"""

import logging
import os
import threading
from collections import deque
from collections.abc import Callable

from django.db import close_old_connections

log = logging.getLogger(__name__)

# Rows a transaction takes: the batch's summary and unit upserts are grouped, so a
# larger batch saves little more, and keeps the write lock longer.
BATCH_ROWS = 64
# Rows queued at most (see the docstring); past it a request writes its own.
MAX_BACKLOG = 4 * BATCH_ROWS
# How long a graceful exit waits for the queue to be written.
STOP_SECONDS = 20.0

_cond = threading.Condition()
_queue: deque = deque()
# pid: the process the thread runs in (a fork has none); busy: rows taken, not yet written.
_state = {"pid": None, "thread": None, "stopping": False, "busy": 0}


def start(write_batch: Callable[[list], None]) -> None:
    """Run this process's writer thread, calling ``write_batch`` with each batch taken."""
    with _cond:
        if _state["pid"] == os.getpid():
            return
        _queue.clear()
        thread = threading.Thread(
            target=_run, args=(write_batch,), name="decision-writer", daemon=True
        )
        _state.update(pid=os.getpid(), thread=thread, stopping=False, busy=0)
    thread.start()


def running() -> bool:
    """Does this process have a writer taking rows?"""
    return _state["pid"] == os.getpid() and not _state["stopping"]


def submit(item) -> bool:
    """Queue a finished row for the writer; False when none runs here or its backlog is
    full: the caller writes the row itself."""
    with _cond:
        if not running() or len(_queue) >= MAX_BACKLOG:
            return False
        _queue.append(item)
        _cond.notify()
    return True


def backlog() -> int:
    """Rows queued or being written."""
    with _cond:
        return len(_queue) + _state["busy"]


def stop(timeout: float = STOP_SECONDS) -> None:
    """Write what is queued, then end the thread (a worker's graceful exit)."""
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


def _run(write_batch: Callable[[list], None]) -> None:
    while True:
        with _cond:
            while not _queue and not _state["stopping"]:
                _cond.wait()
            if not _queue:
                return  # stopping, and everything is written
            batch = [_queue.popleft() for _ in range(min(len(_queue), BATCH_ROWS))]
            _state["busy"] = len(batch)
        try:
            write_batch(batch)
        except Exception:  # write_batch spools what it cannot write; this is a bug's last net
            log.exception("decision_writer_failed rows=%d", len(batch))
        finally:
            # As at a request's end: a connection an error left unusable, or past its
            # CONN_MAX_AGE, is replaced at the next batch.
            close_old_connections()
            with _cond:
                _state["busy"] = 0
                _cond.notify_all()
