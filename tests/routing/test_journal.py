"""A dead worker's journal gives back exactly the decisions it had in flight.

The journal is not truncated as requests finish: a zero byte ends the rows in
flight, and the bytes after it are rows already written. A worker that dies
must leave only its open rows to recover, whatever longer rows came before.
"""

import os

from routing.recording import journal


def _die_after(steps) -> None:
    """Run ``steps`` in a child process that then exits: its journal is a dead one."""
    pid = os.fork()
    if pid == 0:
        try:
            steps()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def test_a_dead_journal_holds_only_the_rows_still_in_flight(tmp_path):
    long_rows = [b'{"id": %d, "long": "%s"}\n' % (i, b"x" * 500) for i in (1, 2)]
    open_row = b'{"id": 3}\n'

    def worker():
        for i, row in enumerate(long_rows, 1):
            journal.opened(tmp_path, i, row)
        journal.closed(1)
        journal.closed(2)  # nothing in flight: the journal is empty again
        journal.opened(tmp_path, 3, open_row)

    _die_after(worker)

    assert [lines for _, lines in journal.dead_journals(tmp_path)] == [[open_row.strip()]]
    assert list(tmp_path.glob("inflight-*.jsonl")) == []


def test_a_dead_journal_keeps_every_row_in_flight_after_one_finished(tmp_path):
    rows = [b'{"id": %d}\n' % i for i in (1, 2, 3)]

    def worker():
        for i, row in enumerate(rows, 1):
            journal.opened(tmp_path, i, row)
        journal.closed(2)  # still two in flight: the journal keeps its rows

    _die_after(worker)

    (lines,) = [lines for _, lines in journal.dead_journals(tmp_path)]
    assert lines == [row.strip() for row in rows]  # the finished one is skipped by its id


def test_a_living_worker_journal_is_not_taken(tmp_path):
    journal.opened(tmp_path, 1, b'{"id": 1}\n')
    try:
        assert list(journal.dead_journals(tmp_path)) == []
    finally:
        journal.closed(1)
