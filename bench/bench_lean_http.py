"""The buffered worker's thread work around the application, gunicorn's way against the lean
exchange (router_project/lean_http.py), in one process.

A worker (the router's class, the shipped limits, no arbiter) serves the
2 KB chat request of bench_proxy.py as its poller hands it over: the thread's
``handle`` from the handed pieces to the keep-alive decision, with a trivial
application (it reads the body and answers 40 bytes of JSON with the
headers the router's API answers carry) on a socket that keeps what is sent.
The two ways alternate in rounds of ``--batch`` requests; reported: the
median of each way's per-request times, with the access log on (to
/dev/null, as ``ROUTER_ACCESS_LOG`` writes it by default, to stdout) and off.

Run: ``.venv/bin/python bench/bench_lean_http.py [--requests 20000] [--batch 500]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gunicorn.config import Config  # noqa: E402
from gunicorn.glogging import Logger  # noqa: E402
from gunicorn.http import wsgi  # noqa: E402
from gunicorn.workers.gthread import TConn  # noqa: E402

from router_project.buffered_worker import BufferedThreadWorker  # noqa: E402
from router_project.connection_io import OneSendResponse, handed_pieces  # noqa: E402
from router_project.lean_http import PlainSettings  # noqa: E402

BODY = b'{"model":"auto","messages":[{"role":"user","content":"' + b"x" * 1950 + b'"}]}'
HEAD = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"
    b"Authorization: Bearer rk-0123456789abcdef\r\nContent-Type: application/json\r\n"
    b"User-Agent: OpenAI/Python 1.54.0\r\nAccept: application/json\r\n"
    b"X-Forwarded-For: 10.0.0.1\r\nX-Forwarded-Proto: http\r\n"
    b"Content-Length: %d\r\n\r\n" % len(BODY)
)
ANSWER = b'{"id":"chatcmpl-1","object":"chat.completion"}'
ANSWER_HEADERS = [
    ("Content-Type", "application/json"),
    ("Content-Length", str(len(ANSWER))),
    ("X-Request-Id", "20261207T030000Z-1"),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "same-origin"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Vary", "Authorization"),
]


class Socket:
    """A connected client's socket: sends are kept, nothing more to read."""

    def __init__(self):
        self.sent = []

    def setblocking(self, _flag):
        pass

    def sendall(self, data):
        self.sent.append(data)

    def recv(self, _size):
        return b""


def app(environ, start_response):
    environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
    start_response("200 OK", ANSWER_HEADERS)
    return [ANSWER]


def worker(access_log: bool) -> BufferedThreadWorker:
    cfg = Config()
    cfg.set("accesslog", os.devnull if access_log else None)
    served = BufferedThreadWorker(0, os.getppid(), [], None, 30, cfg, Logger(cfg))
    served.wsgi = app
    served.plain = PlainSettings(cfg)
    return served


def serve_one(served: BufferedThreadWorker) -> float:
    """One request handed over and served; the thread's time, in seconds."""
    conn = TConn(served.cfg, Socket(), ("127.0.0.1", 40000), ("127.0.0.1", 8000))
    conn.init()  # once a connection, not a request
    served.ours.add(conn)
    data = bytearray(HEAD + BODY)
    conn.handoff = handed_pieces(data, len(HEAD), len(data), False)
    started = time.perf_counter()
    keep = served.handle(conn)
    took = time.perf_counter() - started
    served.ours.discard(conn)
    assert keep and conn.sock.sent[-1].endswith(ANSWER), conn.sock.sent
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000, help="per way and log setting")
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    wsgi.Response = OneSendResponse  # as the worker's init_process sets it
    print(f"thread's work around a trivial app, 2 KB chat request, {args.requests} requests")
    print("| access log | gunicorn's way (µs) | lean (µs) | saved (µs) |")
    print("| --- | --- | --- | --- |")
    for access_log in (True, False):
        served = worker(access_log)
        times = {True: [], False: []}
        for _ in range(200):  # warm both ways
            for lean in (True, False):
                served.plain.usable = lean
                serve_one(served)
        for _ in range(args.requests // args.batch):
            for lean in (True, False):
                served.plain.usable = lean
                times[lean] += [serve_one(served) for _ in range(args.batch)]
        old, new = (statistics.median(times[lean]) * 1e6 for lean in (False, True))
        label = "on (to /dev/null)" if access_log else "off"
        print(f"| {label} | {old:.1f} | {new:.1f} | {old - new:.1f} |")


if __name__ == "__main__":
    main()
