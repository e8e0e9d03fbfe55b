"""What every local test upstream shares: a threaded HTTP/1.1 server that keeps what it got.

Each protocol's fake (openai_upstream, anthropic_upstream) subclasses these
two and only says what it answers. Real sockets, keep-alive, chunked streams.
"""

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _read_request(self) -> bytes:
        """The request body; path, headers, body and arrival time go in ``server.received``."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        with self.server.lock:
            self.server.received.append(
                {
                    "path": self.path,
                    "headers": dict(self.headers.items()),
                    "body": raw,
                    "at": time.monotonic(),
                    "client": self.client_address,  # (host, port): one per connection
                }
            )
        return raw

    def _write_chunk(self, data: bytes):
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _drip(self, data: bytes):
        """A 200 JSON answer sent a byte every 50 ms: alive, but never done in time."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            for i in range(len(data)):
                if self.server.stopping.wait(0.05):
                    return
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _raw(self, status, data, content_type, headers=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class LocalServer(ThreadingHTTPServer):
    """``release`` holds slow streams back, ``stopping`` ends hanging answers."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, handler):
        super().__init__(address, handler)
        self.lock = threading.Lock()
        self.received = []
        self.counts = {}
        self.release = threading.Event()
        self.stopping = threading.Event()
        self.stream_finished = threading.Event()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def within_first(self, key: str, times: int) -> bool:
        """True for the first ``times`` requests counted under ``key`` (scripted failures)."""
        with self.lock:
            seen = self.counts.get(key, 0)
            self.counts[key] = seen + 1
        return seen < times

    def stop(self):
        self.stopping.set()
        self.release.set()
        self.shutdown()
        self.server_close()
