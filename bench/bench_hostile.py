"""Issue 26's hostile scenarios against a real gunicorn: rows against requests, peak worker memory.

Each scenario starts its own router (scripts/serve's gunicorn.conf.py, 2
workers, SQLite in a temp folder) on the test upstream, and reports what the
issue asked for: after the durability scenarios, decision rows against
requests answered; after the memory scenarios, the workers' peak resident
memory (VmHWM, the highest of the two). Loopback only.

Run: ``.venv/bin/python bench/bench_hostile.py [--quick]``
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import requests

from bench.machine import describe_machine
from tests.support.config import base_config
from tests.support.openai_upstream import UpstreamServer
from tests.support.served import gunicorn_router, prepare, router_env


def workers_of(data_dir: str) -> list[int]:
    """This router's gunicorn processes (found by their ROUTER_DATA_DIR)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"gunicorn" in cmdline and f"ROUTER_DATA_DIR={data_dir}".encode() in environ:
            found.append(int(entry.name))
    return found


def peak_mb(data_dir: str) -> float:
    peaks = []
    for pid in workers_of(data_dir):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peaks.append(int(line.split()[1]) / 1024)
    return max(peaks or [0.0])


def rows(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT COUNT(*) FROM routing_routedecision").fetchone()[0]


def ask(router, model="echo-medium", messages=None, stream=False, timeout=60):
    body = {"model": model, "messages": messages or [{"role": "user", "content": "hi"}]}
    if stream:
        body["stream"] = True
    try:
        response = requests.post(
            router.url + "/v1/chat/completions",
            json=body,
            headers={"Authorization": f"Bearer {router.key}"},
            timeout=timeout,
            stream=stream,
        )
        _ = response.content
        return response.status_code
    except requests.RequestException:
        return 0


def with_router(upstream, run, models=()):
    config = base_config(upstream.base_url)
    for name in models:
        config["models"].append(
            {"id": name, "provider": "up", "tier": "medium", "context_window": 10**7}
        )
    with tempfile.TemporaryDirectory() as tmp:
        env = router_env(Path(tmp), config)
        with gunicorn_router(env, prepare(env)) as router:
            return run(router, Path(tmp))


def locked_sqlite(requests_count: int):
    def run(router, tmp):
        db = tmp / "router.sqlite3"
        ask(router)
        before = rows(db)
        locker = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"import sqlite3,sys,time\nc=sqlite3.connect({str(db)!r},"
                "isolation_level=None)\nc.execute('BEGIN IMMEDIATE')\nprint('x',flush=True)\n"
                "sys.stdin.readline()",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        locker.stdout.readline()
        models = ["echo-medium"] * (requests_count - 4) + ["hugeusage-1"] * 4
        with ThreadPoolExecutor(8) as pool:
            statuses = list(
                pool.map(lambda i: ask(router, models[i], stream=i % 3 == 0), range(len(models)))
            )
        locker.communicate("\n", timeout=10)
        answered = sum(1 for s in statuses if s == 200) + 1
        for _ in range(30):  # each request drains what is pending
            time.sleep(1)
            ask(router)
            answered += 1
            if not any((tmp / "spool").glob("*.jsonl")) or rows(db) - before >= answered - 1:
                break
        spool = {p.name: len(p.read_bytes().splitlines()) for p in (tmp / "spool").glob("*.jsonl")}
        return f"{answered} requests answered, {rows(db)} rows; left in the spool: {spool}"

    return run


def memory(label, send):
    def run(router, tmp):
        started = time.monotonic()
        statuses = send(router)
        seconds = time.monotonic() - started
        codes = {code: statuses.count(code) for code in set(statuses)}
        return f"{label}: peak worker {peak_mb(str(tmp)):.0f} MB, statuses {codes}, {seconds:.1f} s"

    return run


def prefix_flood(count):
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(19_999)
    ]

    def send(router):
        out = []
        for n in range(count):
            batch = [{"role": "system", "content": f"conversation {n}"}, *messages]
            out.append(ask(router, "echo-wide", messages=batch))
        return out

    return send


def stored_chain(router):
    url = router.url + "/v1/responses"
    headers = {"Authorization": f"Bearer {router.key}"}
    statuses, previous = [], None
    for _ in range(25):  # one conversation: each 4 MB step continues the one before
        body = {"model": "echo-medium", "input": "y" * (4 * 1024 * 1024)}
        if previous:
            body["previous_response_id"] = previous
        response = requests.post(url, json=body, headers=headers, timeout=120)
        statuses.append(response.status_code)
        previous = response.json().get("id", previous)
    for _ in range(8):
        body = {"model": "echo-medium", "input": "go on", "previous_response_id": previous}
        response = requests.post(url, json=body, headers=headers, timeout=120)
        statuses.append(response.status_code)
        previous = response.json().get("id", previous)
    return statuses


def tiny_parts(router):
    parts = [{"type": "text", "text": "a"}] * 400_000
    return [ask(router, messages=[{"role": "user", "content": parts}])]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts")
    parser.add_argument("--prefix-only", action="store_true", help="the prefix store scenario")
    parser.add_argument("--count", type=int, default=0, help="prefix store: requests")
    args = parser.parse_args()
    upstream = UpstreamServer().start()
    print(describe_machine())
    if args.prefix_only:
        count = args.count or (20 if args.quick else 200)
        store = memory(f"prefix store, {count} requests", prefix_flood(count))
        print(with_router(upstream, store, models=["echo-wide"]))
        upstream.stop()
        return
    try:
        print(
            "SQLite locked, then freed:",
            with_router(upstream, locked_sqlite(40 if args.quick else 120), models=["hugeusage-1"]),
        )
        print(
            with_router(
                upstream,
                memory(
                    "gzip bomb (200 MB decoded)", lambda r: [ask(r, "gzipbomb-1") for _ in range(3)]
                ),
                models=["gzipbomb-1"],
            )
        )
        print(
            with_router(
                upstream,
                memory(
                    "prefix store, 20,000 messages a request",
                    prefix_flood(20 if args.quick else 200),
                ),
                models=["echo-wide"],
            )
        )
        print(
            with_router(
                upstream, memory("stored responses, 25 x 4 MB + 8 continuations", stored_chain)
            )
        )
        print(with_router(upstream, memory("400,000 one-character parts (12 MB)", tiny_parts)))
    finally:
        upstream.stop()


if __name__ == "__main__":
    main()
