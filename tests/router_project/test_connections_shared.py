"""Connections opened at once to a 2-worker router are shared between its workers
(router_project/accept_share.py), never at the cost of a client: a stopped worker does not
keep the other from accepting, and a worker alone takes every connection as gthread does."""

import contextlib
import http.client
import os
import signal
import time

import pytest

from tests.support.config import base_config
from tests.support.served import gunicorn_router, prepare, router_env
from tests.support.workers import connections_by_worker, worker_pids

BURST = 16
# Measured on a 2-core machine at load 10 (a test suite running beside): shared, 138 bursts
# of 140 split 8 and 8, one 9 and 7, one 12 and 4 (a worker woken late, after the 10 ms the
# other waits for it); left to the kernel, one worker took 13 to 16 in 45 bursts of 60, so
# three bursts of at most 12 each would pass without sharing about once in 60.
MOST = 12
BURSTS = 3


@pytest.fixture(scope="module")
def served(tmp_path_factory, module_upstream):
    env = router_env(tmp_path_factory.mktemp("served"), base_config(module_upstream.base_url))
    with gunicorn_router(env, prepare(env)) as router:
        yield router


@contextlib.contextmanager
def opened(served, count: int):
    """``count`` connections opened one right after the other, closed on exit."""
    conns = [http.client.HTTPConnection("127.0.0.1", served.port, timeout=30) for _ in range(count)]
    try:
        for conn in conns:
            conn.connect()
        yield conns
    finally:
        for conn in conns:
            conn.close()


def answered(served, conn) -> int:
    """The status of a request sent on ``conn`` (left open, kept alive)."""
    conn.request("GET", "/v1/models", headers={"Authorization": f"Bearer {served.key}"})
    response = conn.getresponse()
    response.read()
    return response.status


def wait_until(condition, what: str, seconds: float = 30.0):
    deadline = time.monotonic() + seconds
    while not (result := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {seconds}s")
        time.sleep(0.05)
    return result


def serving_workers(served) -> list[int]:
    """Both workers, once each has taken a connection (booted, accepting), and none holds one."""
    workers = worker_pids(served)
    assert len(workers) == 2
    with contextlib.ExitStack() as kept:

        def each_holds_one():
            conn = kept.enter_context(opened(served, 1))[0]
            assert answered(served, conn) == 200
            return all(connections_by_worker(served, workers).values())

        wait_until(each_holds_one, "both workers did not take a connection")
    all_closed(served, workers)
    return workers


def all_closed(served, workers):
    wait_until(
        lambda: not any(connections_by_worker(served, workers).values()),
        "the workers did not close the connections",
    )


def test_sixteen_connections_opened_at_once_are_shared_between_the_workers(served):
    workers = serving_workers(served)
    splits = []
    for _ in range(BURSTS):
        with opened(served, BURST) as conns:
            statuses = [answered(served, conn) for conn in conns]
            held = connections_by_worker(served, workers)
        assert statuses == [200] * BURST
        assert sum(held.values()) == BURST
        splits.append(sorted(held.values()))
        all_closed(served, workers)

    assert all(most <= MOST for _, most in splits), splits


def test_a_stopped_worker_does_not_keep_the_other_from_taking_new_connections(served):
    stopped, other = serving_workers(served)
    os.kill(stopped, signal.SIGSTOP)
    try:
        # Kept open: the other worker soon holds more than the stopped one, which takes none.
        with opened(served, 6) as conns:
            statuses = [answered(served, conn) for conn in conns]
            held = connections_by_worker(served, [stopped, other])
    finally:
        os.kill(stopped, signal.SIGCONT)

    assert statuses == [200] * 6
    assert held == {stopped: 0, other: 6}


def test_a_single_worker_takes_every_connection(tmp_path, upstream):
    env = router_env(tmp_path, base_config(upstream.base_url), ROUTER_WORKERS="1")
    with gunicorn_router(env, prepare(env)) as served:
        (worker,) = worker_pids(served)
        with opened(served, BURST) as conns:
            statuses = [answered(served, conn) for conn in conns]
            held = connections_by_worker(served, [worker])

    assert statuses == [200] * BURST
    assert held == {worker: BURST}
