"""An upstream that answers with the exact bytes a test wrote: the HTTP a real server may send.

The protocol fakes (openai_upstream, anthropic_upstream) answer through
http.server, which only writes well-formed HTTP and closes connections its own
way. The router's HTTP client (routing/providers/connections.py) must also
cope with what they never do: a kept-alive connection closed while idle or
just as the next request arrives, an answer cut mid-body, odd chunking, an
interim 100, a head that is not HTTP. Each request is answered by
``answer(connection, request)`` (both counted from 0): the bytes to send (a
list: pieces sent 20 ms apart, so the reader gets them in separate reads),
and whether to close the connection after them (None: close without
answering).
"""

import socket
import threading
import time

from tests.support.tls import server_context


def completion_bytes(text: str = "hi") -> bytes:
    return (
        b'{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,'
        b'"message":{"role":"assistant","content":"' + text.encode() + b'"},'
        b'"finish_reason":"stop"}]}'
    )


def with_length(body: bytes, status: str = "200 OK", extra: bytes = b"") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n".encode()
        + extra
        + b"\r\n"
        + body
    )


class RawUpstream:
    def __init__(self, answer, tls: bool = False):
        self.answer = answer
        self.received: list[tuple[int, int, bytes]] = []  # (connection, request, head)
        self.connections = 0
        self._tls = tls
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []

    @property
    def url(self) -> str:
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self.port}/v1"

    def start(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self):
        self._listener.close()
        with self._lock:
            for sock in self._open:
                sock.close()

    def _accept(self):
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                number = self.connections
                self.connections += 1
                self._open.append(sock)
            threading.Thread(target=self._serve, args=(sock, number), daemon=True).start()

    def _serve(self, sock: socket.socket, connection: int):
        try:
            if self._tls:
                sock = server_context().wrap_socket(sock, server_side=True)
            pending = b""
            request = 0
            while True:
                while b"\r\n\r\n" not in pending:
                    more = sock.recv(65536)
                    if not more:
                        return
                    pending += more
                head, _, pending = pending.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(pending) < length:
                    pending += sock.recv(65536)
                pending = pending[length:]
                with self._lock:
                    self.received.append((connection, request, head))
                data, close = self.answer(connection, request)
                pieces = [data] if isinstance(data, bytes) else list(data or ())
                for i, piece in enumerate(pieces):
                    if i:
                        time.sleep(0.02)
                    sock.sendall(piece)
                if data is None or close:
                    return
                request += 1
        except OSError:
            return
        finally:
            sock.close()
