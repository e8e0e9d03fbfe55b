"""A worker's memory under parallel continuations of one stored Responses chain.

Issue 43: 8 continuations at once of one ``previous_response_id`` chain took
a worker to 1.64 GB, 16 to 3.99 GB, and 3.74 GB stayed held afterwards. This
serves the router as in production (gunicorn, the shipped settings, one
worker so that every request meets the same process), stores a chain of
``--turns`` turns of ``--turn-mb`` MB each through the Responses API, then
sends ``--parallel`` continuations of its last turn at once, and samples the
worker's resident memory (``/proc/<pid>/status``) every 20 ms: its peak
during the burst and what it holds 3 s after.

Run: ``.venv/bin/python bench/bench_chain_memory.py [--turns 4] [--turn-mb 4]
[--parallel 8,16]``. Loopback only; every process is stopped on exit.
"""

from __future__ import annotations

import argparse
import concurrent.futures
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
from tests.support.openai_upstream import UpstreamServer
from tests.support.served import gunicorn_router, prepare, router_env


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def worker_pid(master: int) -> int:
    pids = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout
    return int(pids.split()[0])


def respond(router, body: dict) -> requests.Response:
    return requests.post(
        router.url + "/v1/responses",
        json=body,
        headers={"Authorization": f"Bearer {router.key}"},
        timeout=300,
    )


def burst(router, pid: int, previous: str, parallel: int) -> tuple[float, float, dict]:
    """(peak MB during, MB 3 s after, statuses) of ``parallel`` continuations at once."""
    peak, done = [rss_mb(pid)], threading.Event()

    def sample():
        while not done.is_set():
            peak.append(rss_mb(pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    body = {"model": "echo-medium", "previous_response_id": previous, "input": "go on"}
    with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
        answers = list(pool.map(lambda _: respond(router, body), range(parallel)))
    done.set()
    sampler.join()
    time.sleep(3)
    statuses: dict = {}
    for answer in answers:
        statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
    return max(peak), rss_mb(pid), statuses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--turn-mb", type=float, default=4.0)
    parser.add_argument("--parallel", default="8,16")
    args = parser.parse_args()
    upstream = UpstreamServer().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            env = router_env(
                Path(tmp), base_config(upstream.base_url), ROUTER_WORKERS="1", ROUTER_ACCESS_LOG=""
            )
            with gunicorn_router(env, prepare(env)) as router:
                pid = worker_pid(router.process.pid)
                text = "x" * int(args.turn_mb * 1024 * 1024)
                previous = None
                for turn in range(args.turns):
                    body = {"model": "echo-medium", "input": f"{turn} {text}"}
                    if previous:
                        body["previous_response_id"] = previous
                    answer = respond(router, body)
                    answer.raise_for_status()
                    previous = answer.json()["id"]
                print(describe_machine())
                print(
                    f"a chain of {args.turns} turns of {args.turn_mb:g} MB; "
                    f"worker at {rss_mb(pid):.0f} MB before the bursts"
                )
                for parallel in (int(n) for n in args.parallel.split(",")):
                    peak, after, statuses = burst(router, pid, previous, parallel)
                    print(
                        f"{parallel:3} at once: peak {peak:7.0f} MB, 3 s after {after:7.0f} MB, "
                        f"answers {statuses}"
                    )
    finally:
        upstream.stop()


if __name__ == "__main__":
    main()
