"""Django's part of an API request, this checkout against another revision's, in process.

bench_front.py serves both routers and times them through wrk, where the
front's 0.2 ms hides in a noisy 1.4 ms; this calls each checkout's WSGI
application directly, in a child process of its own, with a built environ:
the 2 KB chat completion of bench_proxy.py, on bench/fast_upstream.py as
bench_proxy's ``router_beside_upstream`` serves it (one router: its
database and its key are both checkouts'). What is timed is the
application's call with its answer read and closed (as gunicorn does), and
the view's ``post`` within it, in CPU time (the thread's: on a machine shared
with other work, a wall clock also counts the waits for a core); Django's part
is the first less the second: the middleware, the URL resolver, the signals,
the key check. Both children
stay up and are asked for ``--samples`` requests in turn, ``--rounds`` times
each, the order flipped every round, so that a busy moment of the machine
costs both alike; reported are the medians of the rounds' medians, in
microseconds of CPU.

Run: ``.venv/bin/python bench/bench_django_front.py --baseline REV [--rounds 20] [--samples 200]``
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATH = "/v1/chat/completions"
WARMUP = 200


def child() -> None:
    """In a checkout's process (its root the working directory, the body in BENCH_BODY):
    for each number read from stdin, time that many requests, the application and its view;
    print their medians."""
    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
    from router_project.wsgi import application
    from routing.views import CompletionView

    body = Path(os.environ["BENCH_BODY"]).read_bytes()
    in_view = []
    post = CompletionView.post

    def timed_post(self, request):
        started = time.thread_time()
        try:
            return post(self, request)
        finally:
            in_view.append(time.thread_time() - started)

    CompletionView.post = timed_post

    def environ():
        return {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": PATH,
            "SCRIPT_NAME": "",
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "127.0.0.1",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_AUTHORIZATION": f"Bearer {os.environ['BENCH_KEY']}",
            "wsgi.input": io.BytesIO(body),
            "wsgi.url_scheme": "http",
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
        }

    statuses = []

    def start_response(status, headers, exc_info=None):
        statuses.append(status)

    def block(samples: int) -> dict:
        whole, in_view[:] = [], []
        for _index in range(samples):
            request = environ()
            started = time.thread_time()
            answer = application(request, start_response)
            b"".join(answer)
            answer.close()
            whole.append(time.thread_time() - started)
            assert statuses[-1].startswith("200"), statuses[-1]
        django = [w - v for w, v in zip(whole, in_view, strict=True)]
        return {
            "django_us": statistics.median(django) * 1e6,
            "whole_us": statistics.median(whole) * 1e6,
        }

    block(WARMUP)
    print("ready", flush=True)
    for line in sys.stdin:  # the parent asks for one block at a time
        print(json.dumps(block(int(line))), flush=True)


def start_child(root: Path, router, body_file: Path) -> subprocess.Popen:
    env = {**router.env, "BENCH_KEY": router.key, "BENCH_BODY": str(body_file)}
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "bench_django_front.py"), "--child"],
        env=env,
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline().strip() == "ready"
    return child


def ask(child: subprocess.Popen, samples: int) -> dict:
    child.stdin.write(f"{samples}\n")
    child.stdin.flush()
    return json.loads(child.stdout.readline())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return
    sys.path.insert(0, str(ROOT))
    from bench import bench_proxy as proxy
    from bench.bench_ab import checkout

    with (
        tempfile.TemporaryDirectory(prefix="bench-django-") as tmp_name,
        checkout(args.baseline) as baseline,
    ):
        tmp = Path(tmp_name)
        body_file = tmp / "body.json"
        body_file.write_bytes(proxy.corpus_bodies()[0].data)
        roots = {"baseline": baseline, "this checkout": ROOT}
        with proxy.router_beside_upstream("bench-django-front-") as (_, router):
            children = {name: start_child(root, router, body_file) for name, root in roots.items()}
            figures = {name: [] for name in roots}
            for round_ in range(args.rounds):
                order = list(roots) if round_ % 2 == 0 else list(roots)[::-1]
                for name in order:
                    figures[name].append(ask(children[name], args.samples))
            for child_process in children.values():
                child_process.stdin.close()
                child_process.wait()
    print(
        f"POST {PATH}, 2 KB: {args.rounds} rounds of {args.samples} requests each way, "
        "in turn (medians of the rounds' medians, us of CPU)"
    )
    print(f"{'':16}{'Django part':>14}{'whole call':>14}")
    for name, rounds in figures.items():
        django = statistics.median(r["django_us"] for r in rounds)
        whole = statistics.median(r["whole_us"] for r in rounds)
        print(f"{name:16}{django:14.1f}{whole:14.1f}")


if __name__ == "__main__":
    main()
