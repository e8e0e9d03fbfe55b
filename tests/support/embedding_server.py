"""A local OpenAI-compatible /v1/embeddings endpoint whose failures a test chooses."""

from __future__ import annotations

import json
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

# Width of the server's toy vectors: enough for distinct texts to differ.
DIM = 64


def toy_vector(text: str) -> list[float]:
    """A deterministic bag-of-words vector, so similar texts get similar vectors."""
    v = [0.0] * DIM
    for word in text.lower().split():
        v[zlib.crc32(word.encode()) % DIM] += 1.0
    if not any(v):
        v[0] = 1.0
    return v


class EmbeddingServer:
    """A local /v1/embeddings endpoint whose behaviour a test sets with ``mode``.

    Modes: ok, shuffled (rows out of order, with correct indexes), status_500,
    status_401, echo_key (a 401 quoting the Authorization header), slow, not_json,
    no_data, wrong_count, nan, mixed_dims, duplicate_index, strings.
    """

    def __init__(self) -> None:
        self.mode = "ok"
        self.delay = 1.0
        # Set once the server has worked out an answer: a client that gave up
        # before it is set did not wait for the server.
        self.answered = threading.Event()
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                status, payload = server.answer(body, dict(self.headers))
                server.answered.set()
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                try:
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # A short poll interval: shutdown() waits for one poll to pass.
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def texts_embedded(self) -> int:
        return sum(len(r["body"].get("input", [])) for r in self.requests)

    def answer(self, body: dict, headers: dict) -> tuple[int, object]:
        inputs = body.get("input", [])
        rows = [
            {"object": "embedding", "index": i, "embedding": toy_vector(t)}
            for i, t in enumerate(inputs)
        ]
        ok = {"object": "list", "data": rows, "model": body.get("model")}
        mode = self.mode
        if mode == "slow":
            time.sleep(self.delay)
            return 200, ok
        if mode == "shuffled":
            return 200, {**ok, "data": list(reversed(rows))}
        if mode == "status_500":
            return 500, {"error": {"message": "model crashed"}}
        if mode == "status_401":
            return 401, {"error": {"message": "invalid api key"}}
        if mode == "echo_key":
            return 401, {"error": {"message": f"bad {headers.get('Authorization')}"}}
        if mode == "not_json":
            return 200, b"<html>upstream gateway</html>"
        if mode == "no_data":
            return 200, {"object": "list"}
        if mode == "wrong_count":
            return 200, {**ok, "data": rows[:-1]}
        if mode == "nan":
            rows[0]["embedding"][3] = float("nan")  # json.dumps writes NaN
            return 200, ok
        if mode == "mixed_dims":
            rows[-1]["embedding"] = rows[-1]["embedding"][:-1]
            return 200, ok
        if mode == "duplicate_index":
            rows[-1]["index"] = 0
            return 200, ok
        if mode == "strings":
            rows[0]["embedding"] = [str(x) for x in rows[0]["embedding"]]
            return 200, ok
        return 200, ok

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
