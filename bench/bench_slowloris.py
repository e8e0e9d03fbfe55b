"""Slow clients against the production deployment: gunicorn alone vs nginx in front.

Opens 40 slowloris connections (20 that never finish their headers, 20 that
trickle their body, a byte a second each) on loopback, then times normal
requests (2 KB, plain) while they trickle, through the same gunicorn
(shipped settings: 2 workers x 16 threads) directly and through
docs/deploy/nginx.conf. A request not answered within --timeout counts as
timed out. tests/routing/test_deployment.py holds the nginx side in CI.

Run: ``.venv/bin/python bench/bench_slowloris.py [--requests N] [--timeout S]``
(needs nginx: ``apt-get install nginx-light``). ``--slow 256,400`` times
gunicorn alone instead (as scripts/serve runs it: 2 workers x 128 threads),
under that many slow clients (half slow headers, half slow bodies), with
gthread as it is and with the router's worker (router_project/buffered_worker.py).
Loopback only; every process and socket is closed on exit.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import requests

from bench.machine import describe_machine
from tests.support.config import base_config
from tests.support.openai_upstream import UpstreamServer
from tests.support.served import gunicorn_router, nginx_in_front, prepare, router_env
from tests.support.slowloris import Slowloris

# gthread as gunicorn ships it (GUNICORN_CMD_ARGS overrides gunicorn.conf.py), and ours.
WORKERS = {"gthread": {"GUNICORN_CMD_ARGS": "--worker-class gthread"}, "buffered (ours)": {}}
HI = {"model": "echo-medium", "messages": [{"role": "user", "content": "hi " * 600}]}


def timed_requests(url: str, key: str, count: int, timeout: float) -> tuple[list[float], int]:
    times, timed_out = [], 0
    for _ in range(count):
        started = time.perf_counter()
        try:
            response = requests.post(
                url + "/v1/chat/completions",
                json=HI,
                headers={"Authorization": f"Bearer {key}"},
                timeout=timeout,
            )
            response.raise_for_status()
            times.append((time.perf_counter() - started) * 1000)
        except requests.RequestException:
            timed_out += 1
    return times, timed_out


def under_attack(url: str, key: str, count: int, timeout: float, each: int = 20) -> str:
    """``each`` slow-header and ``each`` slow-body clients while ``count`` normal requests run."""
    port = int(url.rsplit(":", 1)[1])
    seconds = min(count * timeout + 10, 120)
    with contextlib.ExitStack() as stack:
        for mode in ("headers", "body"):
            # Slowloris opens 100 connections at most: several for more.
            for start in range(0, each, 100):
                stack.enter_context(Slowloris(port, min(100, each - start), mode, seconds))
        time.sleep(1.5)
        times, timed_out = timed_requests(url, key, count, timeout)
    if not times:
        return f"0/{count} answered ({timed_out} timed out after {timeout:g} s)"
    p95 = statistics.quantiles(times, n=20, method="inclusive")[-1] if len(times) > 1 else times[0]
    return (
        f"{len(times)}/{count} answered, p50 {statistics.median(times):.1f} ms, "
        f"p95 {p95:.1f} ms, max {max(times):.1f} ms, {timed_out} timed out after {timeout:g} s"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument(
        "--slow",
        default="",
        help="comma-separated counts of slow clients: time gunicorn alone (as scripts/serve "
        "runs it) under each, with gthread as it is and with the router's worker, no nginx",
    )
    args = parser.parse_args()
    if args.slow:
        return compare_workers(args)
    upstream = UpstreamServer().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp_path = Path(tmp)
            env = router_env(tmp_path, base_config(upstream.base_url))
            with gunicorn_router(env, prepare(env)) as router:
                with nginx_in_front(tmp_path / "nginx", router) as proxy:
                    print(describe_machine())
                    print("40 slowloris connections (20 slow headers, 20 slow bodies)")
                    idle, _ = timed_requests(proxy, router.key, args.requests, args.timeout)
                    print(f"nginx, no attack:    p50 {statistics.median(idle):.1f} ms")
                    print(
                        "through nginx:      ",
                        under_attack(proxy, router.key, args.requests, args.timeout),
                    )
                print(
                    "gunicorn directly:  ",
                    under_attack(router.url, router.key, args.requests, args.timeout),
                )
    finally:
        upstream.stop()


def compare_workers(args):
    upstream = UpstreamServer().start()
    try:
        print(describe_machine())
        print(f"gunicorn alone, 2 workers x 128 threads, {args.requests} normal requests")
        for slow in args.slow.split(","):
            for worker, extra in WORKERS.items():
                with tempfile.TemporaryDirectory() as tmp:
                    config = base_config(upstream.base_url)
                    env = router_env(Path(tmp), config, **extra)
                    with gunicorn_router(env, prepare(env)) as router:
                        result = under_attack(
                            router.url, router.key, args.requests, args.timeout, int(slow) // 2
                        )
                print(f"{worker:>16}, {slow:>3} slow clients: {result}")
    finally:
        upstream.stop()


if __name__ == "__main__":
    main()
