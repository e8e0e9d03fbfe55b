"""The table of connections each worker holds (router_project/accept_share.py), without
gunicorn: slots taken and freed by the master, counts shared with forked workers, and when
a worker gives way to the others."""

import os
from types import SimpleNamespace

import pytest

from router_project import accept_share
from router_project.accept_share import WAIT_SECONDS, AcceptShare, ConnectionCounts


def test_a_slot_is_taken_once_and_free_again_once_its_worker_has_exited():
    counts = ConnectionCounts(slots=4)
    first, second = counts.take(), counts.take()
    assert (first, second) == (0, 1)

    counts.free(first)

    assert counts.take() == first
    assert counts.take() == 2


def test_a_full_table_seats_no_more_workers():
    counts = ConnectionCounts(slots=2)
    counts.take(), counts.take()
    assert counts.take() is None


def test_the_fewest_counts_the_other_workers_that_accept_only():
    counts = ConnectionCounts(slots=5)
    mine, busy, idle, booting = (counts.take() for _ in range(4))  # the fifth stays free
    counts.publish(mine, 0)
    counts.publish(busy, 9)
    counts.publish(idle, 3)

    assert counts.fewest_besides(mine) == 3
    assert counts.fewest_besides(idle) == 0

    counts.publish(mine, None)  # stopping
    assert counts.fewest_besides(idle) == 9
    counts.free(busy)
    assert counts.fewest_besides(idle) is None
    assert counts.fewest_besides(booting) == 3


def test_a_count_published_by_a_forked_worker_is_seen_by_the_others():
    counts = ConnectionCounts(slots=2)
    mine, forked = counts.take(), counts.take()
    pid = os.fork()
    if pid == 0:
        counts.publish(forked, 7)
        os._exit(0)
    os.waitpid(pid, 0)
    assert counts.fewest_besides(mine) == 7


def seated(counts: ConnectionCounts) -> AcceptShare:
    return AcceptShare(counts, counts.take())


def test_a_worker_alone_is_never_ahead():
    alone = seated(ConnectionCounts(slots=4))
    alone.publish(1000)
    assert not alone.ahead(1000)


def test_a_worker_gives_way_only_while_it_holds_more_than_the_fewest_other():
    counts = ConnectionCounts(slots=4)
    mine, other = seated(counts), seated(counts)
    other.publish(3)

    assert not mine.ahead(3)
    assert mine.ahead(4)


def test_a_worker_booting_or_stopping_is_not_waited_for():
    counts = ConnectionCounts(slots=4)
    mine, other = seated(counts), seated(counts)
    assert not mine.ahead(5)  # the other is booting: seated, nothing published yet

    other.publish(0)
    assert mine.ahead(5)

    other.publish(None)
    assert not mine.ahead(5)


@pytest.fixture
def clock(monkeypatch):
    now = SimpleNamespace(value=0.0)
    monkeypatch.setattr(accept_share.time, "monotonic", lambda: now.value)
    return now


def test_giving_way_lasts_the_wait_from_its_start_at_most(clock):
    share = seated(ConnectionCounts(slots=2))
    share.give_way()
    clock.value += WAIT_SECONDS / 2
    share.give_way()  # the same wait, not a new one
    assert share.giving_way and not share.waited_enough()

    clock.value += WAIT_SECONDS / 2

    assert share.waited_enough()
    share.stop_giving_way()
    assert not share.giving_way


def test_the_master_seats_each_worker_apart_and_a_worker_gone_is_no_longer_counted():
    first, second = SimpleNamespace(), SimpleNamespace()
    accept_share.seat(first)
    accept_share.seat(second)
    try:
        assert first.accept_share.counts is second.accept_share.counts
        assert first.accept_share.slot != second.accept_share.slot
        first.accept_share.publish(0)
        assert second.accept_share.ahead(1)

        accept_share.unseat(first)

        assert not second.accept_share.ahead(1)
    finally:
        accept_share.unseat(second)
