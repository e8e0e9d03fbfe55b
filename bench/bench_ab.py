"""This checkout's router against an earlier revision's, served side by side, requests alternating.

bench_proxy.py measures one router at a time; on a noisy shared machine two
such runs minutes apart differ by more than a round's changes (LiteLLM's own
added latency moved from 18.7 to 23.4 ms between two runs here). This serves
both routers at once, as bench_proxy.py serves one (gunicorn, the shipped
config on bench/fast_upstream.py, a temp SQLite file, one key), from one
upstream, and sends the same body to each in turn on its own keep-alive
connection, the order flipped every round, so that a noisy moment costs both
alike. Reported: the median time of a plain answer, and of the first event of
a streamed one, for the 2 KB and the 368 KB body of bench_proxy.py, for each
router, and the difference.

The earlier revision is checked out with ``git worktree`` into a temp folder
(removed at exit) and run with this virtual environment: a revision that
needs other dependencies fails at its migrate, naming them.

``--candidate REV`` serves that revision instead of this checkout (to measure
one change between two commits).

Run: ``.venv/bin/python bench/bench_ab.py --baseline REV [--candidate REV] [--requests 600]``
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import bench_proxy as proxy  # noqa: E402
from bench.machine import describe_machine  # noqa: E402


@contextmanager
def checkout(revision: str):
    """A detached worktree of ``revision``, removed at exit."""
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        path = Path(tmp) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(path), revision],
            check=True,
        )
        try:
            yield path
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], check=False
            )


@contextmanager
def side_by_side(baseline: str, candidate: str | None):
    """This checkout (or ``candidate``) and ``baseline`` served at once on one upstream.

    Yields {name: bench_proxy.Router}, this checkout's name "this checkout"; all stopped at exit.
    """
    name = candidate or "this checkout"
    with (
        tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp,
        checkout(baseline) as old,
        checkout(candidate) if candidate else nullcontext(ROOT) as new_root,
    ):
        upstream_port = proxy.free_port()
        upstream = proxy.start(
            [proxy.PYTHON, str(ROOT / "bench" / "fast_upstream.py"), str(upstream_port)]
        )
        routers = {}
        try:
            proxy.wait_for(upstream_port, upstream, "fast_upstream")
            upstream_url = f"http://127.0.0.1:{upstream_port}/v1"
            for served, root in ((name, new_root), (baseline, old)):
                folder = Path(tmp) / str(len(routers))
                folder.mkdir()
                routers[served] = proxy.prepare_router(folder, upstream_url, root=root)
                proxy.serve_router(routers[served])
                proxy.wait_for(routers[served].port, routers[served].process, f"router at {served}")
            yield routers
        finally:
            for router in routers.values():
                if router.process is not None:
                    proxy.stop(router.process)
            proxy.stop(upstream)


def timed(conn: http.client.HTTPConnection, body: bytes, key: str, stream: bool) -> float:
    """Milliseconds to the whole answer, or to the first SSE line of a streamed one."""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    started = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", body=body, headers=headers)
    response = conn.getresponse()
    if stream:
        response.readline()
    elapsed = (time.perf_counter() - started) * 1000
    response.read()
    if response.status != 200:
        sys.exit(f"HTTP {response.status} from port {conn.port}")
    return elapsed


def alternate(routers: dict, data: bytes, stream: bool, requests: int, skip: int) -> dict:
    connections = {
        name: http.client.HTTPConnection("127.0.0.1", r.port) for name, r in routers.items()
    }
    times = {name: [] for name in routers}
    order = list(routers)
    for round_ in range(requests):
        for name in order if round_ % 2 else reversed(order):
            times[name].append(timed(connections[name], data, routers[name].key, stream))
    for conn in connections.values():
        conn.close()
    return {name: statistics.median(values[skip:]) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the git revision to compare with")
    parser.add_argument("--candidate", help="a git revision to serve instead of this checkout")
    parser.add_argument("--requests", type=int, default=600, help="per router, body and mode")
    parser.add_argument("--skip", type=int, default=50, help="first requests left out (warm-up)")
    args = parser.parse_args()
    print(describe_machine())
    bodies = proxy.corpus_bodies()
    name = args.candidate or "this checkout"
    with side_by_side(args.baseline, args.candidate) as routers:
        rows = []
        for body in bodies:
            for stream, what in ((False, "answer"), (True, "first SSE event")):
                data = body.stream_data if stream else body.data
                medians = alternate(routers, data, stream, args.requests, args.skip)
                new, then = medians[name], medians[args.baseline]
                rows.append(
                    [
                        body.label,
                        what,
                        f"{new:.2f}",
                        f"{then:.2f}",
                        f"{new - then:+.2f}",
                        f"{new / then:.2f}x",
                    ]
                )
    print(
        f"{args.requests} requests to each router a row, alternating; medians after {args.skip}, ms"
    )
    print(proxy.table(["body", "time to", name, args.baseline, "difference", "ratio"], rows))


if __name__ == "__main__":
    main()
