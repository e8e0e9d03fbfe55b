"""A loopback HTTP proxy that lets nothing out and writes down what was asked of it.

An end-to-end test of a real client (Codex CLI) points the client's proxy
variables here: every host the client tries to reach beyond the router is
recorded (``server.targets``) and refused with a 403, so nothing leaves the
machine and the test can say what the client tried.
"""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Refuse(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _refuse(self):
        with self.server.lock:
            self.server.targets.append(f"{self.command} {self.path}")
        self.send_response(403, "egress refused by the test")
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    do_CONNECT = do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = do_PATCH = _refuse


class EgressRecorder(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Refuse)
        self.lock = threading.Lock()
        self.targets: list[str] = []
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()
