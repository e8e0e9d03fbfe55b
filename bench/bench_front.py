"""The router's front (gunicorn's worker, Django around the view, the key check) against an
earlier revision's, served side by side, with wrk alternating between them.

bench_ab.py times completions one request at a time on one connection; the
front's cost shows best where the view does next to nothing, and under load.
This serves both routers as bench_proxy.py serves one (gunicorn, the shipped
config on bench/fast_upstream.py, a temp SQLite file, one key) and runs wrk,
``--rounds`` times, on each endpoint and concurrency, this checkout and the
baseline in turn (the order flipped every round, so that a noisy moment costs
both alike): ``GET /v1/models`` (authenticated; the view reads the cached
config and lists it) and the 2 KB and 368 KB chat completions of
bench_proxy.py (``--endpoints`` picks some).
Reported: the medians over the rounds of wrk's p50, requests/s, and the
router's CPU time a request (its gunicorn processes' user and system time over
the run, the decision writer's included, divided by the requests answered):
on a machine shared with other work the p50 also counts the time a request
waits for a core that work holds, the CPU a request does not.

Run: ``.venv/bin/python bench/bench_front.py --baseline REV [--candidate REV] [--rounds 3]
[--duration 5] [--endpoints models,2,368] [--clients 1,16]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import bench_proxy as proxy  # noqa: E402
from bench.bench_ab import side_by_side  # noqa: E402
from bench.machine import describe_machine  # noqa: E402

ENDPOINTS = {
    "models": "GET /v1/models",
    "2": "POST /v1/chat/completions (2 KB)",
    "368": "POST /v1/chat/completions (368 KB)",
}


def cpu_seconds(group: int) -> float:
    """User and system time of the processes in ``group`` (gunicorn's master and workers:
    bench_proxy.start gives the master a session of its own)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[2]) == group:
            total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
    return total / os.sysconf("SC_CLK_TCK")


def wrk(url: str, method: str, path: str, body: Path | None, key: str, clients: int, seconds):
    script = Path(tempfile.mkstemp(suffix=".lua")[1])
    lines = [f"wrk.method = '{method}'", f"wrk.headers['Authorization'] = 'Bearer {key}'"]
    if body is not None:
        lines += [
            f"local f = io.open({json.dumps(str(body))}, 'rb')",
            "wrk.body = f:read('*a')",
            "f:close()",
            "wrk.headers['Content-Type'] = 'application/json'",
        ]
    script.write_text("\n".join(lines) + "\n")
    command = ["wrk", "-t1", f"-c{clients}", f"-d{seconds:g}s", "--latency", "-s", str(script)]
    out = subprocess.run([*command, url + path], capture_output=True, text=True, check=True).stdout
    script.unlink()
    p50 = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)\s*$", out, re.MULTILINE)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    answered = re.search(r"(\d+) requests in", out)
    if p50 is None or rps is None or answered is None or "Non-2xx" in out:
        sys.exit(f"wrk on {url}{path}:\n{out}")
    return (
        float(p50.group(1)) * proxy.UNITS[p50.group(2)],
        float(rps.group(1)),
        int(answered.group(1)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the git revision to compare with")
    parser.add_argument("--candidate", help="a git revision to serve instead of this checkout")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per wrk run")
    parser.add_argument(
        "--endpoints", default="models,2,368", help=f"some of {','.join(ENDPOINTS)}"
    )
    parser.add_argument(
        "--clients", default=",".join(map(str, proxy.CONCURRENCY)), help="wrk's connections"
    )
    args = parser.parse_args()
    endpoints = [ENDPOINTS[name] for name in args.endpoints.split(",")]
    concurrency = [int(clients) for clients in args.clients.split(",")]
    print(describe_machine())
    bodies = {f"POST /v1/chat/completions ({b.label})": b for b in proxy.corpus_bodies()}
    name = args.candidate or "this checkout"
    with (
        tempfile.TemporaryDirectory(prefix="bench-front-") as tmp,
        side_by_side(args.baseline, args.candidate) as routers,
    ):
        body_files = {}
        for endpoint, body in bodies.items():
            body_files[endpoint] = Path(tmp) / f"{body.label.replace(' ', '')}.json"
            body_files[endpoint].write_bytes(body.data)
            for served, router in routers.items():
                for _ in range(proxy.WARMUP_REQUESTS):
                    proxy.check_target(proxy.Target(served, router.port, router.key), body)
        runs: dict[tuple, list] = {}
        for round_ in range(args.rounds):
            order = list(routers) if round_ % 2 else list(reversed(routers))
            for endpoint in endpoints:
                method, path = endpoint.split()[:2]
                for clients in concurrency:
                    for served in order:
                        router = routers[served]
                        group = router.process.pid
                        cpu_before = cpu_seconds(group)
                        p50, rps, answered = wrk(
                            router.url,
                            method,
                            path,
                            body_files.get(endpoint),
                            router.key,
                            clients,
                            args.duration,
                        )
                        cpu_us = (cpu_seconds(group) - cpu_before) / answered * 1e6
                        runs.setdefault((endpoint, clients, served), []).append((p50, rps, cpu_us))
    rows = []
    for endpoint in endpoints:
        for clients in concurrency:
            new, then = (
                [
                    statistics.median(f[i] for f in runs[(endpoint, clients, served)])
                    for i in (0, 1, 2)
                ]
                for served in (name, args.baseline)
            )
            rows.append(
                [
                    endpoint,
                    str(clients),
                    f"{new[0]:.3f}",
                    f"{then[0]:.3f}",
                    f"{new[1]:.0f}",
                    f"{then[1]:.0f}",
                    f"{new[1] / then[1]:.2f}x",
                    f"{new[2]:.0f}",
                    f"{then[2]:.0f}",
                    f"{new[2] / then[2]:.2f}x",
                ]
            )
    print(f"wrk -t1, {args.duration:g} s a run, medians of {args.rounds} rounds, alternating")
    header = ["endpoint", "clients", f"p50 ms {name}", f"p50 ms {args.baseline}"]
    header += [f"req/s {name}", f"req/s {args.baseline}", "req/s ratio"]
    header += [f"CPU us/req {name}", f"CPU us/req {args.baseline}", "CPU ratio"]
    print(proxy.table(header, rows))


if __name__ == "__main__":
    main()
