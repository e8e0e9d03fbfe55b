"""Load through the production deployment: nginx + gunicorn, on SQLite and on PostgreSQL.

N concurrent clients for T seconds, each request drawn from a fixed mix: half
of them streamed, 15% carrying a 300 KB agent conversation (tool results that
pinch prunes), the rest a 2 KB question. The upstream is bench/fast_upstream.py
(in its own process, faster than the router), so the figures are the
router's: requests/s, latency p50/p99 (time to the whole answer, streams
included), errors by status, and the decision rows written against the
requests answered, which must be equal (every request that reached an
upstream leaves exactly one row, with its final status).

Run: ``.venv/bin/python bench/bench_load.py [--clients 12] [--seconds 30] [--db sqlite,postgres]``
PostgreSQL at 127.0.0.1:5432 (user postgres, trust) gets a scratch database,
dropped afterwards. Needs nginx (``apt-get install nginx-light``). Loopback only.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import requests

from bench.machine import describe_machine
from tests.support.config import base_config
from tests.support.postgres import scratch_database
from tests.support.served import free_port, gunicorn_router, nginx_in_front, prepare, router_env

STREAMED_SHARE = 0.5
LARGE_SHARE = 0.15


def small_body() -> dict:
    question = "Explain what this function does and suggest a test. " * 40  # ~2 KB
    return {"model": "echo-medium", "messages": [{"role": "user", "content": question}]}


def large_body() -> dict:
    """~300 KB of agent history: 30 tool results of 10 KB each, then a question."""
    messages = [{"role": "system", "content": "You are a coding agent."}]
    messages.append({"role": "user", "content": "Fix the failing test in the parser."})
    for i in range(30):
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{i}.py"})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        lines = "".join(f"def function_{i}_{n}(x):\n    return x * {n}\n" for n in range(300))
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": lines[:10_000]})
    messages.append({"role": "user", "content": "Now run the tests again."})
    return {"model": "echo-medium", "messages": messages}


class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.statuses: collections.Counter = collections.Counter()
        self.errors: collections.Counter = collections.Counter()

    def add(self, status: int, ms: float):
        with self.lock:
            self.statuses[status] += 1
            if status == 200:
                self.latencies.append(ms)

    def failed(self, reason: str):
        with self.lock:
            self.errors[reason] += 1


def client(url: str, key: str, bodies: dict, until: float, results: Results, seed: int):
    rng = random.Random(seed)
    session = requests.Session()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    while time.monotonic() < until:
        stream = rng.random() < STREAMED_SHARE
        large = rng.random() < LARGE_SHARE
        data = bodies[(large, stream)]
        started = time.perf_counter()
        try:
            response = session.post(
                url + "/v1/chat/completions", data=data, headers=headers, stream=stream, timeout=60
            )
            for _ in response.iter_content(65536):
                pass
            results.add(response.status_code, (time.perf_counter() - started) * 1000)
        except requests.RequestException as error:
            results.failed(type(error).__name__)


def encoded_bodies() -> dict:
    bodies = {}
    for large, make in ((False, small_body), (True, large_body)):
        for stream in (False, True):
            bodies[(large, stream)] = json.dumps({**make(), "stream": stream}).encode()
    return bodies


@contextlib.contextmanager
def fast_upstream():
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "fast_upstream.py"), str(port)]
    )
    try:
        for _ in range(50):
            try:
                requests.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except requests.RequestException:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(10)


def run(db: str, upstream_url: str, clients: int, seconds: float) -> str:
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        tmp_path = Path(tmp)
        extra = {"ROUTER_ACCESS_LOG": ""}
        if db == "postgres":
            extra["DATABASE_URL"] = stack.enter_context(scratch_database())
        env = router_env(tmp_path, base_config(upstream_url), **extra)
        router = stack.enter_context(gunicorn_router(env, prepare(env)))
        url = stack.enter_context(nginx_in_front(tmp_path / "nginx", router))
        bodies = encoded_bodies()
        results = Results()
        until = time.monotonic() + seconds
        threads = [
            threading.Thread(target=client, args=(url, router.key, bodies, until, results, i))
            for i in range(clients)
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        answered = sum(results.statuses.values())
        rows = router.count_rows()
        unfinished = router.count_rows(status_code__isnull=True)
        latencies = sorted(results.latencies)
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else 0
        return (
            f"{db:9s} {answered / elapsed:7.1f} req/s  p50 {statistics.median(latencies):7.1f} ms"
            f"  p99 {p99:7.1f} ms  statuses {dict(results.statuses)}"
            f"  client errors {dict(results.errors) or 0}"
            f"  rows {rows} / answered {answered}"
            f" ({'equal' if rows == answered else 'NOT EQUAL'}; {unfinished} without a status)"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--db", default="sqlite,postgres")
    args = parser.parse_args()
    print(describe_machine())
    print(
        f"{args.clients} clients x {args.seconds:g} s; {STREAMED_SHARE:.0%} streamed, "
        f"{LARGE_SHARE:.0%} 300 KB bodies; nginx + gunicorn (2 workers x 16 threads)"
    )
    with fast_upstream() as upstream_url:
        for db in args.db.split(","):
            print(run(db, upstream_url, args.clients, args.seconds), flush=True)


if __name__ == "__main__":
    main()
