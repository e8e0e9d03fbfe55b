"""New connections shared between the router's gunicorn workers.

Every worker's poller accepts on the same listening socket, and a connection
stays with the worker that accepted it (agents keep theirs alive). Connections
opened together arrive as a burst, and the worker whose poller wakes first
accepts them one after another while the other is still being scheduled: with
2 workers and 16 connections opened at once, all 16 landed on one worker in 3
runs of 6 and requests/s halved (the work is Python, one core a worker under
its GIL; the other core idled). Registering the listener with EPOLLEXCLUSIVE
did not help.

So each worker's count of open connections sits in a small table of shared
memory, made in the master before it forks the workers (gunicorn.conf.py's
``pre_fork``; a slot is freed in ``child_exit``). A worker holding more than
the fewest of an accepting other (+ ``SLACK``) takes its listener out of its
poller, leaving the connection to the others, and looks again every
``RECHECK_SECONDS``: it puts the listener back as soon as it is no longer
ahead; after ``WAIT_SECONDS`` it takes a waiting connection on each turn until
none waits, so that a worker that is stopped, wedged or too busy to accept
never leaves a client waiting much longer. A worker that does not accept
(still booting, or stopping) is not counted, and one that has exited is no
longer in the table. With one worker there is no other: it accepts as gthread
does.
"""

from __future__ import annotations

import mmap
import time

# 0: a worker publishes its count before each wait in its poll, so the counts
# are exact while it waits and a turn old at most while it works; a worker
# gives way only when it truly holds more, and a burst ends within one
# connection of even (8 and 8 of 16).
SLACK = 0
# A live worker's poller takes a waiting connection within about 0.1 ms when
# idle, and within a GIL switch interval (5 ms) or two when its threads are
# busy in Python: 10 ms lets it, and is about the most a new connection waits
# when the other worker is stopped (a burst's next ones follow a turn of the
# loop apart, a millisecond or so; once per connection: clients keep it alive).
WAIT_SECONDS = 0.010
# How often a worker giving way looks at the counts again (epoll's resolution).
RECHECK_SECONDS = 0.001

SLOTS = 64  # workers seated at once (gunicorn's TTIN and reloads add some); any more accept freely
FREE = -1
AWAY = -2  # a seated worker that does not accept: booting or stopping


class ConnectionCounts:
    """Each worker's open connections, in memory the master shares with the workers it forks.

    Only the master takes and frees slots (before a fork, after a worker exited);
    a worker writes its own slot only.
    """

    def __init__(self, slots: int = SLOTS):
        self._memory = mmap.mmap(-1, slots * 8)  # anonymous and shared: inherited by a fork
        self._counts = memoryview(self._memory).cast("q")
        for slot in range(slots):
            self._counts[slot] = FREE

    def take(self) -> int | None:
        """A free slot, now marked as not accepting yet; None when all are taken."""
        for slot, count in enumerate(self._counts.tolist()):
            if count == FREE:
                self._counts[slot] = AWAY
                return slot
        return None

    def free(self, slot: int) -> None:
        self._counts[slot] = FREE

    def publish(self, slot: int, count: int | None) -> None:
        """A worker's count of open connections; None while it does not accept."""
        self._counts[slot] = AWAY if count is None else count

    def fewest_besides(self, slot: int) -> int | None:
        """The fewest connections any other accepting worker holds; None without one."""
        counts = self._counts.tolist()
        counts[slot] = AWAY
        return min([count for count in counts if count >= 0], default=None)


class AcceptShare:
    """One worker's slot, and whether it gives way to the others for now."""

    def __init__(self, counts: ConnectionCounts, slot: int):
        self.counts = counts
        self.slot = slot
        self.held_since: float | None = None  # since when it gives way

    def publish(self, count: int | None) -> None:
        self.counts.publish(self.slot, count)

    def ahead(self, count: int) -> bool:
        """Whether, holding ``count`` connections, this worker leaves the next one to another."""
        fewest = self.counts.fewest_besides(self.slot)
        return fewest is not None and count > fewest + SLACK

    def give_way(self) -> None:
        if self.held_since is None:
            self.held_since = time.monotonic()

    @property
    def giving_way(self) -> bool:
        return self.held_since is not None

    def waited_enough(self) -> bool:
        return time.monotonic() - self.held_since >= WAIT_SECONDS

    def stop_giving_way(self) -> None:
        self.held_since = None


class SharedAccept:
    """gthread's accept, shared with the other workers: a mixin of its worker class, which
    accepts a connection in ``accept_one``."""

    accept_share: AcceptShare | None = None  # the master seats the worker before its fork

    def accept(self, listener):
        share = self.accept_share
        if share is not None and share.ahead(self.nr_conns):
            share.give_way()
            self.set_accept_enabled(False)
            return
        self.accept_one(listener)

    def set_accept_enabled(self, enabled):
        # The loop asks on each of its turns: the listener stays out while giving way.
        share = self.accept_share
        super().set_accept_enabled(enabled and not (share is not None and share.giving_way))

    def wait_for_and_dispatch_events(self, timeout):
        share = self.accept_share
        if share is None:
            return super().wait_for_and_dispatch_events(timeout)
        share.publish(self.nr_conns if self.alive else None)
        if share.giving_way:
            timeout = min(timeout, RECHECK_SECONDS)
        super().wait_for_and_dispatch_events(timeout)
        if share.giving_way:
            self._after_giving_way(share)

    def _after_giving_way(self, share: AcceptShare):
        """Stop giving way once no longer ahead; once waited long enough, take a waiting
        connection on each turn (the others are stopped, wedged or too busy to), until none
        waits. Stopped, the loop's next turn puts the listener back in the poller."""
        full = self.nr_conns >= self.worker_connections  # the loop keeps the listener out then
        if not self.alive or full or not share.ahead(self.nr_conns):
            share.stop_giving_way()
        elif share.waited_enough():
            before = self.nr_conns
            for listener in self.sockets:
                self.accept_one(listener)
            if self.nr_conns == before:  # none waits (any more)
                share.stop_giving_way()


_counts: ConnectionCounts | None = None


def seat(worker) -> None:
    """In the master, before ``worker`` is forked: a slot of its own (``worker.accept_share``)."""
    global _counts
    if _counts is None:  # once: the workers of every reload share one table
        _counts = ConnectionCounts()
    slot = _counts.take()
    worker.accept_share = None if slot is None else AcceptShare(_counts, slot)


def unseat(worker) -> None:
    """In the master, once ``worker`` has exited: its slot is free for a new one."""
    share = getattr(worker, "accept_share", None)
    if share is not None:
        share.counts.free(share.slot)
