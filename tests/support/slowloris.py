"""Slowloris clients: loopback connections that send a request a byte at a time.

``mode="headers"`` never finishes its headers; ``mode="body"`` sends complete
headers announcing a body and then trickles it. Bounded in count and time:
every socket is closed after ``seconds``, or on leaving the ``with`` block.
"""

from __future__ import annotations

import socket
import threading
import time

BODY_BYTES = 100_000  # announced, never sent in full


class Slowloris:
    def __init__(self, port: int, count: int, mode: str = "headers", seconds: float = 30.0):
        assert count <= 100 and seconds <= 120, "bounded: loopback tests only"
        self.port = port
        self.count = count
        self.mode = mode
        self.seconds = seconds
        self.sockets: list[socket.socket] = []
        self.dropped = 0  # connections the server closed while we trickled
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._trickle, daemon=True)

    def _opening(self) -> bytes:
        start = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if self.mode == "headers":
            return start + b"Content-Type: application/json\r\n"
        return (
            start
            + f"Content-Length: {BODY_BYTES}\r\nContent-Type: application/json\r\n\r\n{{".encode()
        )

    def __enter__(self):
        for _ in range(self.count):
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            sock.sendall(self._opening())
            self.sockets.append(sock)
        self._started = time.monotonic()
        self._thread.start()
        return self

    def _trickle(self):
        byte = b"X" if self.mode == "headers" else b" "
        alive = list(self.sockets)
        while alive and not self._stop.wait(1.0):
            if time.monotonic() - self._started > self.seconds:
                break
            for sock in list(alive):
                try:
                    sock.sendall(byte)
                except OSError:
                    alive.remove(sock)
                    self.dropped += 1

    def still_open(self) -> int:
        """How many of our connections the server has not closed (a peek, no reading)."""
        count = 0
        for sock in self.sockets:
            try:
                sock.setblocking(False)
                data = sock.recv(1, socket.MSG_PEEK)
                count += data != b""  # b"" is EOF; data is an answer (e.g. a 408)
            except BlockingIOError:
                count += 1  # nothing to read: still waiting for us
            except OSError:
                pass
            finally:
                sock.setblocking(True)
        return count

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)
        for sock in self.sockets:
            sock.close()
