"""How a burst of connections opened at once splits between the router's 2 workers, against
an earlier revision, served side by side (bench_ab.side_by_side).

A connection stays with the worker that accepted it, so a burst that lands on
one worker leaves the other's core idle for as long as the clients keep their
connections (router_project/accept_share.py). Each run is wrk with
``--clients`` connections opened at once, for ``--duration`` seconds, posting
bench_proxy.py's 368 KB body (``--body 2`` for the 2 KB one); halfway through,
the established connections each worker holds are counted (``ss -tnp``).
``--settle`` seconds pass between runs, for the requests of the run before to
finish (0: back to back, a busy worker then accepts late). The revisions
take turns, the order flipped every round. Printed: each run's requests/s and
split, then per revision the median requests/s and how many runs left one
worker more than ``--most`` connections.

Run: ``.venv/bin/python bench/bench_split.py --baseline REV [--rounds 6] [--duration 3]
[--clients 16] [--settle 2] [--body 368]``
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import bench_proxy as proxy  # noqa: E402
from bench.bench_ab import side_by_side  # noqa: E402
from bench.machine import describe_machine  # noqa: E402


def split(port: int) -> list[int]:
    """The established connections to ``port`` each process holds, fewest first."""
    out = subprocess.run(
        ["ss", "-tnpH", "state", "established", f"( sport = :{port} )"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(Counter(re.findall(r"pid=(\d+)", out)).values())


def run(router, body_file: Path, clients: int, duration: float) -> tuple[float, list[int]]:
    """wrk on ``router``: its requests/s, and the split read halfway through."""
    seen = []
    reader = threading.Timer(duration / 2, lambda: seen.append(split(router.port)))
    reader.start()
    load = proxy.wrk(router.url, body_file, router.key, clients, duration)
    reader.join()
    return load.rps, seen[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the git revision to compare with")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per wrk run")
    parser.add_argument("--clients", type=int, default=16, help="wrk's connections")
    parser.add_argument("--settle", type=float, default=2.0, help="seconds between runs")
    parser.add_argument("--body", choices=("2", "368"), default="368", help="KB")
    parser.add_argument("--most", type=int, default=10, help="connections on one worker, at most")
    args = parser.parse_args()
    print(describe_machine())
    small, large = proxy.corpus_bodies()
    body = small if args.body == "2" else large
    runs: dict[str, list[tuple[float, list[int]]]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="bench-split-") as tmp,
        side_by_side(args.baseline, None) as routers,
    ):
        body_file = Path(tmp) / "body.json"
        body_file.write_bytes(body.data)
        for served, router in routers.items():
            for _ in range(proxy.WARMUP_REQUESTS):
                proxy.check_target(proxy.Target(served, router.port, router.key), body)
        for round_ in range(args.rounds):
            order = list(routers) if round_ % 2 else list(reversed(routers))
            for served in order:
                time.sleep(args.settle)
                rps, held = run(routers[served], body_file, args.clients, args.duration)
                runs.setdefault(served, []).append((rps, held))
                print(f"{served:>14}  req/s {rps:6.1f}  split {held}", flush=True)
    print()
    for served, results in runs.items():
        lopsided = sum(1 for _, held in results if max(held, default=0) > args.most)
        print(
            f"{served:>14}  median req/s {statistics.median(r for r, _ in results):6.1f}  "
            f"runs with a worker over {args.most} connections: {lopsided} of {len(results)}"
        )


if __name__ == "__main__":
    main()
