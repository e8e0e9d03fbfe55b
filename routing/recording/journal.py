"""Decisions in flight, on disk: a worker that dies mid-answer still leaves its row.

A decision is written once, when its answer ends (routing/recording/decisions.py). A
worker killed before that (OOM, SIGKILL at the end of a graceful timeout, a
crash mid-stream) would leave nothing, though the upstream was called and
paid. So each process writes the row it opens to its own journal,
``<ROUTER_DATA_DIR>/spool/inflight-<pid>.jsonl`` (a plain write, no fsync: it
has to survive the process, not the machine), after the rows still in flight
and followed by a zero byte: the journal's rows end at its first zero byte
(JSON has none). Whenever nothing is in flight, a zero byte at its start
empties it: one write of a byte into the page cache, where truncating the
file after each request changed its size on disk (13 us against 2 us). The
process holds an flock on its journal for as long as it lives; a journal
whose lock can be taken belongs to a dead process, and the spool's drain turns its
entries into rows marked interrupted (status 500, ``error`` saying so, the
prompt tokens estimated, no completion). A row whose answer ended but which
the process's writer had not committed yet (routing/recording/writer.py) has
its final line appended, marked ``FINISHED_KEY``: that one is written as it
is, with its real figures (``final_rows``). Entries
whose request did finish are in the database or the spool under the same id
already, and the spool's "ignore a row whose id exists" skips them; the spool
is drained first so a finished row always wins over its interrupted twin.

Only requests with a reserved id are journaled (routing/recording/ids.py): a
crash of a request that started while the database could not even hand out
an id loses its row.
"""

import fcntl
import logging
import os
import threading
from pathlib import Path

log = logging.getLogger(__name__)

# Past this size the journal is rewritten with only what is still in flight
# (under steady load the in-flight set may never be empty: a worker's writer
# closes its rows 0.05 s after their answers); the file keeps its largest size.
MAX_BYTES = 4 * 1024 * 1024
INTERRUPTED = "interrupted: the router worker stopped before the answer ended"
END = b"\0"  # after the rows in flight; what follows it is rows already finished
# A line's own key, no column: the row is final (its answer ended), recovered as it is.
FINISHED_KEY = "_finished"

_lock = threading.Lock()
# end: where the rows in flight end in the file (its next row goes there).
_state = {"fd": None, "pid": None, "directory": None, "path": None, "end": 0}
_in_flight: dict[int, bytes] = {}


def _fd(directory: Path) -> int:
    """This process's journal, opened and locked on first use (and after a fork or a move)."""
    pid = os.getpid()
    if _state["fd"] is None or _state["pid"] != pid or _state["directory"] != directory:
        path = directory / f"inflight-{pid}.jsonl"
        if _state["fd"] is not None:
            # After a fork the lock stays with the parent's copy; closing ours is safe.
            os.close(_state["fd"])
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        _state.update(fd=fd, pid=pid, directory=directory, path=path, end=0)
        _in_flight.clear()
    return _state["fd"]


def opened(directory: Path, decision_id, line: bytes) -> None:
    """Note a decision in flight (``line``: its row as the spool encodes it)."""
    _note(directory, decision_id, line)


def finished(directory: Path, decision_id, line: bytes) -> None:
    """Note a decision's final row (``line``, marked ``FINISHED_KEY``), queued for the
    process's writer (routing/recording/writer.py): a worker that dies before the writer
    commits it leaves the row as it ended, not interrupted."""
    _note(directory, decision_id, line)


def _note(directory: Path, decision_id, line: bytes) -> None:
    """Append ``line`` after the rows in flight; the decision's last line is the one kept."""
    if decision_id is None:
        return
    try:
        with _lock:
            fd = _fd(directory)
            _in_flight[decision_id] = line
            os.pwrite(fd, line + END, _state["end"])
            _state["end"] += len(line)
    except OSError as error:
        log.warning("journal_unavailable reason=%s", error)


def closed(decision_id) -> None:
    """The decision is in the database or the spool: drop it from the journal."""
    if decision_id is None:
        return
    try:
        with _lock:
            if _in_flight.pop(decision_id, None) is None or _state["pid"] != os.getpid():
                return
            fd = _state["fd"]
            if not _in_flight:
                os.pwrite(fd, END, 0)
                _state["end"] = 0
            elif _state["end"] > MAX_BYTES:
                # Rewritten at the start, the file's size kept: the rows after END are done
                # and its pages stay. Truncated, the next 4 MB of rows grew it again, each
                # write allocating: the two writes of a request took 6 us, 3 us without.
                rows = b"".join(_in_flight.values())
                os.pwrite(fd, rows + END, 0)
                _state["end"] = len(rows)
    except OSError as error:
        log.warning("journal_unavailable reason=%s", error)


def dead_journals(directory: Path):
    """Yield (path, lines) of each journal whose process is gone; the file goes after the loop step.

    The caller writes the rows, then the generator removes the file; a caller
    that stops early (a database error) leaves the file for the next time.
    """
    for path in sorted(directory.glob("inflight-*.jsonl")):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its process is alive (this one included)
            rows = path.read_bytes().partition(END)[0]
            lines = [line for line in rows.splitlines() if line.strip()]
            yield path, lines
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)


def final_rows(rows: list[dict]) -> list[dict]:
    """The row each decision of a dead journal ends with: its finished line as it is (its
    request was answered, its row queued), else its opening line marked interrupted."""
    final: dict = {}
    for row in rows:
        if row.pop(FINISHED_KEY, False):
            final[row["id"]] = row
        elif row["id"] not in final:
            final[row["id"]] = interrupted(row)
    return list(final.values())


def interrupted(fields: dict) -> dict:
    """The final row of a decision whose worker died before its answer ended."""
    return {
        **fields,
        "status_code": 500,
        "error": INTERRUPTED,
        "prompt_tokens": fields.get("measured_tokens"),
        "completion_tokens": 0,
        "usage_estimated": True,
    }
