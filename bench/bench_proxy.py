"""What the router adds to a request: straight to an upstream vs through the router, side by side.

A router is worth its hop only if the hop is cheap next to what it saves. This
serves the router as a user does (gunicorn, gthread workers, DJANGO_DEBUG=0,
its own temp SQLite file, a temp config whose every model points at
bench/fast_upstream.py, one API key, pinch on at the shipped defaults,
relevance ordering off as shipped), then drives the same request bodies with ``wrk`` straight
at the upstream and through the router, at concurrency 1 and 16:

* requests/s and latency p50/p99, and the added latency (through - direct,
  paired per round so a noisy moment hits both sides);
* the floor: one parse + serialise of the same body, the least any proxy
  that reads the body must do, with the json module and with orjson (what the
  router uses), and the added p50 as a multiple of the orjson floor;
* the concurrency-16 tail (p99 / p50);
* time to the first SSE event of a streamed answer, direct vs through.

``--litellm`` adds an anchor measured in the same run, against the same
upstream: the LiteLLM proxy at a pinned version, installed on first use into
a virtual environment of its own under ~/.cache (bench/litellm_anchor.py says
how it is kept offline), and prints the side-by-side table with the ratios.

Bodies, both from the corpus (routing/replay/corpus.py): the 2 KB first request of
026.json (one user message) and its last request, 368 KB of agent history that
pinch prunes before it goes upstream.

``--profile`` instead runs the router in process (the WSGI app through Django's
test client, same temp DB and config) under pyinstrument and prints where a
request's time goes.

``--stages`` adds, in the same run, bench/bench_stages.py's table: where the
router's own time goes, stage by stage, for each protocol.

Run: ``.venv/bin/python bench/bench_proxy.py [--duration S] [--rounds N] [--litellm] [--stages]
[--profile]``
Needs ``wrk`` (Debian: ``apt-get install wrk``). Everything listens on
127.0.0.1 and is stopped on exit.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import bench_conversations
from bench.litellm_anchor import LITELLM_VERSION, start_litellm
from bench.machine import describe_machine

PYTHON = sys.executable
CONCURRENCY = (1, 16)
# Router workers as shipped (ROUTER_WORKERS default); on a 2-core machine more
# would only fight wrk and the upstream for the same cores.
WORKERS = "2"
WARMUP_REQUESTS = 20  # per body: every worker loads the embedder and fills its caches


# --- Processes ---


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(port: int, process: subprocess.Popen, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            out = process.stdout.read().decode(errors="replace") if process.stdout else ""
            sys.exit(f"{what} exited with {process.returncode}:\n{out}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"{what} did not listen on port {port} within {timeout:g}s")


def start(args: list[str], env: dict | None = None, root: Path = ROOT) -> subprocess.Popen:
    # A session of its own, so stopping it also stops the workers it forked.
    return subprocess.Popen(
        args,
        env=env,
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def router_config(upstream_url: str, root: Path = ROOT) -> dict:
    """The shipped config (pinch, classifier, objective) with every model on the bench upstream."""
    data = yaml.safe_load((root / "routing" / "config" / "default_config.yaml").read_text())
    data["providers"] = {"fast": {"kind": "openai", "base_url": upstream_url}}
    data["models"] = [
        {"id": f"fast-{tier}", "provider": "fast", "tier": tier, "context_window": 1_000_000}
        for tier in data["routing"]["tiers"]
    ]
    return data


@dataclass
class Router:
    url: str
    port: int
    key: str
    env: dict
    process: subprocess.Popen | None = None
    root: Path = ROOT  # the checkout it serves


def prepare_router(
    tmp: Path, upstream_url: str, database_url: str = "", root: Path = ROOT
) -> Router:
    config = tmp / "router.yaml"
    config.write_text(yaml.safe_dump(router_config(upstream_url, root)))
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url or f"sqlite:///{tmp / 'router.sqlite3'}",
        "ROUTER_DATA_DIR": str(tmp),
        "ROUTER_CONFIG": str(config),
        "DJANGO_DEBUG": "0",
        "ROUTER_BIND": f"127.0.0.1:{port}",
        "ROUTER_WORKERS": WORKERS,
        "ROUTER_ACCESS_LOG": "",
        "REDIS_URL": "",
    }
    manage = [PYTHON, str(root / "manage.py")]
    if database_url:
        subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=root, check=True)
    else:
        shutil.copyfile(_migrated_sqlite(root), tmp / "router.sqlite3")
    created = subprocess.run(
        [*manage, "createapikey", "bench"],
        env=env,
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    key = created.stdout.strip().splitlines()[-1]
    return Router(f"http://127.0.0.1:{port}", port, key, env, root=root)


# A checkout -> an empty SQLite database migrated once, copied for each router: the checks
# start a fresh router per scenario, and migrating each took seconds of their run.
_MIGRATED: dict[Path, Path] = {}


def _migrated_sqlite(root: Path) -> Path:
    if root not in _MIGRATED:
        folder = Path(tempfile.mkdtemp(prefix="router-migrated-"))
        atexit.register(shutil.rmtree, folder, True)
        database = folder / "router.sqlite3"
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{database}",
            "ROUTER_DATA_DIR": str(folder),
        }
        manage = [PYTHON, str(root / "manage.py")]
        subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=root, check=True)
        _MIGRATED[root] = database
    return _MIGRATED[root]


def serve_router(router: Router) -> None:
    conf = router.root / "router_project" / "gunicorn.conf.py"
    router.process = start(
        [PYTHON, "-m", "gunicorn", "-c", str(conf)], env=router.env, root=router.root
    )
    wait_for(router.port, router.process, "gunicorn")


# --- Bodies ---


@dataclass
class Body:
    label: str
    data: bytes
    stream_data: bytes


def corpus_bodies() -> list[Body]:
    _, conversations = bench_conversations()
    session = next(c for c in conversations if c.name == "026.json")
    requests = list(session.requests())
    bodies = []
    for messages in (requests[0], requests[-1]):
        body = {"model": "auto", "messages": messages}
        data = json.dumps(body).encode()
        stream = json.dumps({**body, "stream": True}).encode()
        size = len(data) / 1024
        bodies.append(Body(f"{size:.0f} KB", data, stream))
    return bodies


# --- Measurements ---


@dataclass
class Load:
    rps: float
    p50_ms: float
    p99_ms: float
    failures: int


UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def wrk(url: str, body_file: Path, key: str, connections: int, duration: float) -> Load:
    script = body_file.with_suffix(".lua")
    script.write_text(
        f"local f = io.open({json.dumps(str(body_file))}, 'rb')\n"
        "wrk.body = f:read('*a')\nf:close()\n"
        "wrk.method = 'POST'\n"
        "wrk.headers['Content-Type'] = 'application/json'\n"
        f"wrk.headers['Authorization'] = 'Bearer {key}'\n"
    )
    out = subprocess.run(
        [
            "wrk",
            "-t1",
            f"-c{connections}",
            f"-d{duration:g}s",
            "--timeout",
            "30s",
            "--latency",
            "-s",
            str(script),
            url + "/v1/chat/completions",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    percentiles = {
        int(m.group(1)): float(m.group(2)) * UNITS[m.group(3)]
        for m in re.finditer(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", out, re.MULTILINE)
    }
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    failures = int(bad.group(1)) if bad else 0
    failures += sum(int(n) for n in errors.groups()) if errors else 0
    if rps is None or len(percentiles) != 2:
        sys.exit(f"could not read wrk's output:\n{out}")
    return Load(float(rps.group(1)), percentiles[50], percentiles[99], failures)


def first_event_ms(port: int, body: bytes, key: str, samples: int) -> list[float]:
    """Time from sending a streamed request to reading the first SSE line, on one connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    times = []
    try:
        for _ in range(samples):
            started = time.perf_counter()
            conn.request("POST", "/v1/chat/completions", body=body, headers=headers)
            response = conn.getresponse()
            first = response.readline()
            times.append((time.perf_counter() - started) * 1000)
            response.read()
            if response.status != 200 or not first.startswith(b"data:"):
                sys.exit(f"stream failed: HTTP {response.status} {first[:200]!r}")
    finally:
        conn.close()
    return times


def floor_ms(data: bytes, library=json, rounds: int = 200) -> float:
    """Median of one parse + serialise of the body: the least a body-reading proxy does.

    ``library``: json, or orjson (what the router uses: routing/jsonio.py).
    """
    gc.disable()
    try:
        samples = []
        for _ in range(rounds):
            started = time.perf_counter_ns()
            library.dumps(library.loads(data))
            samples.append(time.perf_counter_ns() - started)
    finally:
        gc.enable()
    return statistics.median(samples) / 1e6


def check_target(target: Target, body: Body) -> None:
    """One request before the load: a refusal must stop the bench, not become its figures."""
    conn = http.client.HTTPConnection("127.0.0.1", target.port, timeout=30)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {target.key}"}
    conn.request("POST", "/v1/chat/completions", body=body.data, headers=headers)
    response = conn.getresponse()
    text = response.read()
    conn.close()
    if response.status != 200:
        sys.exit(
            f"{target.name} refused the {body.label} body: HTTP {response.status} {text[:300]}"
        )


# --- Report ---


def machine() -> str:
    wrk_version = subprocess.run(
        ["wrk", "-v"], capture_output=True, text=True, check=False
    ).stdout.split()[:2]
    return f"{describe_machine()} at start, {' '.join(wrk_version)}"


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(f"{cell:>{w}}" for cell, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(f"{cell:>{w}}" for cell, w in zip(row, widths, strict=True)))
    return "\n".join(lines)


def med(values) -> float:
    return statistics.median(values)


@dataclass
class Target:
    """Where wrk sends the bodies: the upstream itself, the router, the LiteLLM anchor."""

    name: str
    port: int
    key: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def run_bench(args) -> None:
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed (Debian: apt-get install -y wrk)")
    bodies = corpus_bodies()
    print(f"machine: {machine()}")
    print(
        f"router: gunicorn gthread, {WORKERS} workers x 16 threads, "
        f"{'PostgreSQL' if args.database_url.startswith('postgres') else 'SQLite'}, "
        "pinch at the shipped defaults; upstream: bench/fast_upstream.py; "
        f"wrk -t1, {args.duration:g} s per run, medians of {args.rounds} rounds"
    )
    if args.litellm:
        print(f"anchor: LiteLLM proxy {LITELLM_VERSION}, 1 worker, no database (its own venv)")
    with tempfile.TemporaryDirectory(prefix="bench-proxy-") as tmp_name:
        tmp = Path(tmp_name)
        upstream_port = free_port()
        upstream = start([PYTHON, str(ROOT / "bench" / "fast_upstream.py"), str(upstream_port)])
        router = anchor = None
        try:
            wait_for(upstream_port, upstream, "fast_upstream")
            upstream_url = f"http://127.0.0.1:{upstream_port}/v1"
            router = prepare_router(tmp, upstream_url, args.database_url)
            serve_router(router)
            targets = [
                Target("direct", upstream_port, router.key),
                Target("router", router.port, router.key),
            ]
            if args.litellm:
                anchor = start_litellm(tmp, upstream_url, free_port(), start)
                targets.append(Target("litellm", anchor.port, anchor.key))
            files = {}
            for i, body in enumerate(bodies):
                files[body.label] = tmp / f"body{i}.json"
                files[body.label].write_bytes(body.data)
                for target in targets[1:]:
                    for _ in range(WARMUP_REQUESTS + 1):
                        check_target(target, body)

            results: dict[tuple, list[Load]] = {}
            for _ in range(args.rounds):
                for body in bodies:
                    for connections in CONCURRENCY:
                        for target in targets:
                            load = wrk(
                                target.url,
                                files[body.label],
                                target.key,
                                connections,
                                args.duration,
                            )
                            results.setdefault((body.label, connections, target.name), []).append(
                                load
                            )

            ttfb = {}
            for body in bodies:
                for target in targets:
                    ttfb[(body.label, target.name)] = first_event_ms(
                        target.port, body.stream_data, target.key, args.samples
                    )
        finally:
            for process in (anchor and anchor.process, router and router.process, upstream):
                if process is not None:
                    stop(process)

    names = [t.name for t in targets]
    report(bodies, names, results, ttfb, args.samples)
    if args.stages:
        from bench import bench_stages  # it serves the router with this module's helpers

        print()
        print("Where the router's time goes, per stage (bench/bench_stages.py, in process)")
        bench_stages.report(
            bench_stages.run(argparse.Namespace(samples=args.samples, protocol=None))
        )


def added(results, body, connections, name, field="p50_ms") -> float:
    """Through ``name`` minus straight to the upstream, paired per round, median."""
    direct = results[(body.label, connections, "direct")]
    through = results[(body.label, connections, name)]
    return med(getattr(t, field) - getattr(d, field) for d, t in zip(direct, through, strict=True))


def added_cell(results, body, connections, name, field) -> str:
    return "" if name == "direct" else f"{added(results, body, connections, name, field):.2f}"


def report(bodies, names, results, ttfb, samples) -> None:
    print()
    print("Proxy overhead (wrk; added = through - direct, paired per round, median)")
    rows = []
    for body in bodies:
        for connections in CONCURRENCY:
            for name in names:
                runs = results[(body.label, connections, name)]
                rows.append(
                    [
                        body.label,
                        str(connections),
                        name,
                        f"{med(r.rps for r in runs):,.0f}",
                        f"{med(r.p50_ms for r in runs):.2f}",
                        f"{med(r.p99_ms for r in runs):.2f}",
                        ""
                        if name == "direct"
                        else f"{added(results, body, connections, name):.2f}",
                        ""
                        if name == "direct"
                        else f"{added(results, body, connections, name, 'p99_ms'):.2f}",
                        str(sum(r.failures for r in runs)),
                    ]
                )
    header = ["body", "conc", "through", "req/s", "p50 ms", "p99 ms", "added p50", "added p99"]
    print(table([*header, "errors"], rows))

    if "litellm" in names:
        print()
        print("Side by side (the issue's table): router vs the LiteLLM proxy, same run")
        rows = []
        for body in bodies:
            for connections in CONCURRENCY:
                ours = added(results, body, connections, "router")
                theirs = added(results, body, connections, "litellm")
                ours_rps = med(r.rps for r in results[(body.label, connections, "router")])
                theirs_rps = med(r.rps for r in results[(body.label, connections, "litellm")])
                rows.append(
                    [
                        body.label,
                        str(connections),
                        f"+{ours:.2f}",
                        f"+{theirs:.2f}",
                        f"{theirs / ours:.1f}x" if ours > 0 else "-",
                        f"{ours_rps:,.0f}",
                        f"{theirs_rps:,.0f}",
                        f"{ours_rps / theirs_rps:.1f}x",
                    ]
                )
        print(
            table(
                [
                    "body",
                    "conc",
                    "router added p50 ms",
                    "LiteLLM added p50 ms",
                    "LiteLLM/router",
                    "router req/s",
                    "LiteLLM req/s",
                    "router/LiteLLM",
                ],
                rows,
            )
        )

    print()
    print("The floor: one parse + serialise of the body (median of 200), json and orjson")
    rows = []
    for body in bodies:
        floor_json = floor_ms(body.data)
        floor_orjson = floor_ms(body.data, orjson)
        ours = added(results, body, 1, "router")
        rows.append(
            [
                body.label,
                f"{floor_json:.3f}",
                f"{floor_orjson:.3f}",
                f"{ours:.2f}",
                f"{ours / floor_orjson:.1f}x",
            ]
        )
    print(
        table(
            ["body", "json ms", "orjson ms", "router added p50 (conc 1)", "added / orjson floor"],
            rows,
        )
    )

    print()
    print("Concurrency 16: the router's tail")
    rows = []
    for body in bodies:
        runs = results[(body.label, 16, "router")]
        p50, p99 = med(r.p50_ms for r in runs), med(r.p99_ms for r in runs)
        rows.append([body.label, f"{p50:.2f}", f"{p99:.2f}", f"{p99 / p50:.1f}x"])
    print(table(["body", "router p50 ms", "router p99 ms", "p99 / p50"], rows))

    print()
    print(f"Streaming: time to the first SSE event, sequential, {samples} samples, median ms")
    rows = []
    for body in bodies:
        direct = med(ttfb[(body.label, "direct")])
        row = [body.label, f"{direct:.2f}"]
        for name in names[1:]:
            row += [
                f"{med(ttfb[(body.label, name)]):.2f}",
                f"{med(ttfb[(body.label, name)]) - direct:.2f}",
            ]
        rows.append(row)
    header = ["body", "direct"]
    for name in names[1:]:
        header += [name, f"{name} added"]
    print(table(header, rows))


# --- Profile ---


@contextmanager
def router_beside_upstream(prefix: str):
    """(temp dir, a prepared Router) with bench/fast_upstream.py serving; stopped at exit.

    The router is prepared (migrated, a key made), not served: the caller runs it.
    """
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp_name:
        tmp = Path(tmp_name)
        upstream_port = free_port()
        upstream = start([PYTHON, str(ROOT / "bench" / "fast_upstream.py"), str(upstream_port)])
        try:
            wait_for(upstream_port, upstream, "fast_upstream")
            yield tmp, prepare_router(tmp, f"http://127.0.0.1:{upstream_port}/v1")
        finally:
            stop(upstream)


def run_profile(args) -> None:
    """Serve nothing: run the WSGI app in a child process under pyinstrument."""
    with router_beside_upstream("bench-proxy-") as (_, router):
        env = {**router.env, "BENCH_KEY": router.key}
        subprocess.run(
            [PYTHON, __file__, "--profile-child", "--samples", str(args.samples)],
            env=env,
            cwd=ROOT,
            check=True,
        )


def profile_child(args) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
    import django

    django.setup()
    from django.test import Client
    from pyinstrument import Profiler

    client = Client(HTTP_AUTHORIZATION=f"Bearer {os.environ['BENCH_KEY']}", HTTP_HOST="127.0.0.1")
    for body in corpus_bodies():

        def call(body=body):
            response = client.post(
                "/v1/chat/completions", data=body.data, content_type="application/json"
            )
            assert response.status_code == 200, response.content[:300]
            return response

        for _ in range(WARMUP_REQUESTS):
            call()
        times = []
        for _ in range(args.samples):
            started = time.perf_counter()
            response = call()
            times.append((time.perf_counter() - started) * 1000)
        overhead = response.headers.get("X-Router-Overhead-Ms")
        print(
            f"\n=== {body.label} body: in-process request p50 {med(times):.2f} ms "
            f"(X-Router-Overhead-Ms of the last: {overhead}), floor {floor_ms(body.data):.3f} ms"
        )
        profiler = Profiler(interval=0.0002)
        profiler.start()
        for _ in range(args.samples):
            call()
        profiler.stop()
        print(profiler.output_text(unicode=False, color=False, show_all=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=4, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians are reported)")
    parser.add_argument("--samples", type=int, default=50, help="streamed / profiled requests")
    parser.add_argument(
        "--database-url",
        default="",
        help="the router's database (default: a temp SQLite file); bench rows are left in it",
    )
    parser.add_argument(
        "--litellm",
        action="store_true",
        help=f"also measure the LiteLLM proxy {LITELLM_VERSION} (installed on first use)",
    )
    parser.add_argument(
        "--stages", action="store_true", help="also print bench_stages.py's per-stage table"
    )
    parser.add_argument("--profile", action="store_true", help="profile the router instead")
    parser.add_argument("--profile-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.profile_child:
        profile_child(args)
    elif args.profile:
        run_profile(args)
    else:
        run_bench(args)


if __name__ == "__main__":
    main()
