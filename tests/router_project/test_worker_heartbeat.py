"""The buffered worker tells gunicorn's arbiter it is alive at most once a second, not on every
turn of its loop (router_project/buffered_worker.py): a worker kept busy for longer than its
timeout is left alone, and a worker that stops is still killed and replaced."""

import os
import signal
import threading
import time

import pytest
import requests

from tests.support.config import base_config
from tests.support.served import gunicorn_router, prepare, router_env
from tests.support.workers import worker_pids

TIMEOUT = 2  # ROUTER_WORKER_TIMEOUT, seconds


@pytest.fixture
def served(tmp_path, upstream):
    env = router_env(
        tmp_path,
        base_config(upstream.base_url),
        ROUTER_WORKERS="1",
        ROUTER_WORKER_TIMEOUT=str(TIMEOUT),
    )
    with gunicorn_router(env, prepare(env)) as router:
        yield router


def models(served):
    headers = {"Authorization": f"Bearer {served.key}"}
    return requests.get(served.url + "/v1/models", headers=headers, timeout=10)


def test_a_worker_busy_for_longer_than_its_timeout_is_not_killed(served):
    (worker,) = worker_pids(served)
    statuses = []
    until = time.monotonic() + 3 * TIMEOUT

    def keep_asking():
        with requests.Session() as session:
            session.headers["Authorization"] = f"Bearer {served.key}"
            while time.monotonic() < until:
                statuses.append(session.get(served.url + "/v1/models", timeout=10).status_code)

    askers = [threading.Thread(target=keep_asking) for _ in range(4)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()

    assert len(statuses) > 100 and set(statuses) == {200}
    assert worker_pids(served) == [worker]


def test_a_stopped_worker_is_killed_and_replaced_within_its_timeout(served):
    (worker,) = worker_pids(served)
    os.kill(worker, signal.SIGSTOP)  # its loop turns no more, as if wedged

    deadline = time.monotonic() + 10 * TIMEOUT
    while time.monotonic() < deadline and worker_pids(served) in ([worker], []):
        time.sleep(0.2)

    assert worker not in worker_pids(served)
    assert models(served).status_code == 200
