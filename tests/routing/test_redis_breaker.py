"""A Redis that is down or never answers costs one short timeout per breaker period, for
every Redis user of the process together; the prefix probe marks what it measured without it."""

import shutil
import socket
import subprocess
import threading
import time

import pytest

from pinch.embedding_cache import EmbeddingCache
from routing.embedding_tier import RedisTier
from routing.models import RouteDecision
from routing.prefix_probe import PrefixProbe
from routing.shared_redis import shared_redis
from tests.support.ci import missing
from tests.support.served import free_port


class SilentRedis:
    """Accepts connections and never answers: the worst kind of broken Redis."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.accepted = 0
        self.held = []
        self.url = f"redis://127.0.0.1:{self.sock.getsockname()[1]}/0"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.held.append(connection)

    def close(self):
        self.sock.close()
        for connection in self.held:
            connection.close()


@pytest.fixture
def silent_redis():
    server = SilentRedis()
    yield server
    server.close()


def msgs(*texts):
    return [{"role": "user", "content": t} for t in texts]


def test_a_silent_redis_costs_one_timeout_for_the_probe_and_the_cache_together(silent_redis):
    probe = PrefixProbe(silent_redis.url)
    cache = EmbeddingCache(shared=RedisTier(silent_redis.url))

    figures = [probe.figures("conv", msgs(*"abcdefgh"[: n + 1])) for n in range(5)]
    for _ in range(5):
        cache.put_many({"k": b"v"})
        assert cache.get_many(["k"]) == {"k": b"v"}  # the process tier carries on

    assert silent_redis.accepted == 1
    assert all(f.fallback for f in figures)
    # Measured against this process's memory of the outage, and marked as such.
    assert figures[-1][:3] == (4, 4, 5)


def test_after_the_period_a_single_caller_probes_redis_again(silent_redis):
    probe = PrefixProbe(silent_redis.url)
    shared_redis(silent_redis.url).open_seconds = 0.3
    probe.figures("conv", msgs("a"))
    assert silent_redis.accepted == 1
    time.sleep(0.4)

    threads = [threading.Thread(target=probe.figures, args=(f"c{i}", msgs("a"))) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert silent_redis.accepted == 2


@pytest.fixture
def own_redis(tmp_path):
    """A private redis-server on a free loopback port, stoppable mid-test."""
    binary = shutil.which("redis-server")
    if binary is None:
        missing("redis-server (the Redis breaker test starts its own)")
    port = free_port()
    servers = []

    def start():
        process = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(tmp_path),
            ],
            stdout=subprocess.DEVNULL,
        )
        servers.append(process)
        for _ in range(50):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        pytest.fail("redis-server did not start")

    def stop():
        servers[-1].terminate()
        servers[-1].wait(10)

    start()
    yield f"redis://127.0.0.1:{port}/0", start, stop
    for process in servers:
        if process.poll() is None:
            process.terminate()
            process.wait(10)


def test_redis_stopped_mid_conversation_marks_figures_and_never_reuses_a_stale_turn(own_redis):
    url, start, stop = own_redis
    shared_redis(url).open_seconds = 0.2
    probe = PrefixProbe(url)

    assert probe.figures("conv", msgs("a"))[:4] == (0, 0, 1, False)
    assert probe.figures("conv", msgs("a", "b"))[:4] == (1, 1, 2, False)
    stop()
    time.sleep(0.3)
    # No shared state: nothing known about the previous turn, and it says so.
    assert probe.figures("conv", msgs("a", "b", "c"))[:4] == (0, 0, 3, True)
    time.sleep(0.3)
    assert probe.figures("conv", msgs("a", "b", "c", "d"))[:4] == (3, 3, 4, True)
    start()
    time.sleep(0.3)
    assert probe.figures("conv", msgs("a", "b", "c", "d", "e"))[:4] == (0, 0, 5, False)
    stop()
    time.sleep(0.3)
    # A second outage does not compare against the first one's memory ("a".."d").
    assert probe.figures("conv", msgs("a", "b", "c", "d", "e", "f"))[:4] == (0, 0, 6, True)


@pytest.mark.django_db
def test_decision_rows_say_when_the_prefix_was_measured_without_redis(
    client, router_config, api_key, settings, silent_redis
):
    settings.REDIS_URL = silent_redis.url
    for turn in (["a"], ["a", "b"]):
        body = {"model": "echo-medium", "messages": msgs(*turn)}
        response = client.post(
            "/v1/chat/completions",
            body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {api_key}",
        )
        assert response.status_code == 200

    rows = list(RouteDecision.objects.order_by("id"))
    assert [(r.prefix_match, r.prefix_fallback) for r in rows] == [(0, True), (1, True)]
    assert silent_redis.accepted == 1
