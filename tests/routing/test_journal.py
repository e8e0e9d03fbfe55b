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


def test_a_journal_rewritten_past_its_size_holds_only_the_rows_still_in_flight(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(journal, "MAX_BYTES", 2000)
    rows = {i: b'{"id": %d, "long": "%s"}\n' % (i, b"x" * 300) for i in range(1, 12)}

    def worker():
        journal.opened(tmp_path, 1, rows[1])  # in flight throughout: never empty
        for i in range(2, 12):
            journal.opened(tmp_path, i, rows[i])
            if i != 7:
                journal.closed(i)  # past 2000 bytes: rewritten with what is in flight

    _die_after(worker)

    (path,) = tmp_path.glob("inflight-*.jsonl")
    assert path.stat().st_size > 2000  # the rewrite kept the file's size, its old rows after END
    (lines,) = [lines for _, lines in journal.dead_journals(tmp_path)]
    # The rows in flight first, then whole rows closed since (skipped by their ids), and
    # nothing of what the rewrite left after its END.
    assert lines[:2] == [rows[1].strip(), rows[7].strip()]
    assert len(lines) < 11 and all(line + b"\n" in rows.values() for line in lines)
