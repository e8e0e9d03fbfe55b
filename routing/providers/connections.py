"""HTTP/1.1 to the upstreams: keep-alive connections pooled per origin, TLS, one send.

A proxy sends a body it has already serialised and reads back bytes; what it
needs of an HTTP client is small: a pool of kept-alive connections per origin,
safe across a worker's threads; TLS verified against certifi's CA bundle;
connect and read timeouts; Content-Length, chunked and read-to-close answers;
gzip and deflate when a provider takes them. urllib3 did that (issue 14 to
42), at a price per call that was most of the router's client side: its retry
and pool bookkeeping, http.client's request assembly, a new buffered file per
answer, and the answer's head parsed by the ``email`` package. Measured
against bench/fast_upstream.py, one keep-alive connection, a 2 KB chat body
through ``OpenAICompatibleProvider.chat`` (medians of 3,000 calls, in
process, three runs of each alternating, load 6-8): urllib3 250-390 µs, this
client 58-59 µs (bare http.client, no pool, 125-170 µs); a 150 KB body
525-680 µs against 330-400 µs.

What it keeps of urllib3's behaviour: urllib3's own TLS context
(``create_urllib3_context``: TLS 1.2 at least, its verify flags and options,
ALPN http/1.1) with certifi's bundle and the host name checked; TCP_NODELAY;
an idle connection found readable (closed by the upstream, or sending
unasked) is dropped before use; a connection goes back to its pool only once
its answer was read to the end and framed (not read to close), and never after
an error. Beyond it: a request on a kept-alive connection that the upstream
closed before answering a byte is sent again once, on a fresh connection (an
upstream's idle timeout racing the next request; it costs the dispatcher's
retry and its pause otherwise). Nothing here reads the environment (no proxy
variables, no netrc), as before. Answers are read by routing/providers/framing.py.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections import deque
from urllib.parse import urlsplit

import certifi
from urllib3.util.ssl_ import create_urllib3_context

from routing.providers.framing import (
    MAX_HEAD_BYTES,
    READ_BYTES,
    BrokenAnswer,
    Connection,
    Response,
    head_end,
    parse_head,
)

# Idle kept-alive connections kept per origin (a worker's threads, gunicorn.conf.py's
# 128 by default, mostly wait on slow clients, not upstreams); more are opened when needed.
POOL_SIZE = 32

# URLs looked up: far more than a config's providers ask; past it the pools start afresh
# (a test session serves hundreds of upstreams, each on its own port).
MAX_URLS = 64

# Below this, the head and the body go out in one send (one copy, one segment); above
# it, the body is not copied and goes in a second send.
JOIN_BELOW = 16384


class CannotConnect(ConnectionError):
    """No connection could be opened (refused, no such host): nothing was sent."""


class ConnectTimeout(CannotConnect):
    """The connection (or its TLS handshake) took longer than the connect timeout."""


class StaleConnection(BrokenAnswer):
    """A kept-alive connection the upstream closed before answering a byte."""


class Pool:
    """The kept-alive connections to one origin (scheme, host, port), most recent first."""

    def __init__(self, scheme: str, host: str, port: int):
        self.host = host
        self.port = port
        self.tls = scheme == "https"
        default = 443 if self.tls else 80
        shown = f"[{host}]" if ":" in host else host
        header = shown if port == default else f"{shown}:{port}"
        self.host_header = header.encode() if header.isascii() else header.encode("idna")
        self._idle: deque[Connection] = deque()
        self._lock = threading.Lock()
        self._closed = False

    def get(self, connect_timeout: float) -> Connection:
        """An idle connection still open, or a new one (``CannotConnect``, ssl.SSLError)."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect(connect_timeout)
            if not conn.dropped():
                conn.reused = True
                return conn
            conn.close()

    def _connect(self, timeout: float) -> Connection:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=timeout)
        except TimeoutError:
            raise ConnectTimeout(f"no connection within {timeout:g}s") from None
        except OSError as error:
            raise CannotConnect(str(error)) from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls:
                sock = _tls_context().wrap_socket(sock, server_hostname=self.host)
        except TimeoutError:
            sock.close()
            raise ConnectTimeout(f"no TLS handshake within {timeout:g}s") from None
        except BaseException:
            sock.close()
            raise
        return Connection(sock)

    def put(self, conn: Connection) -> None:
        with self._lock:
            if len(self._idle) < POOL_SIZE and not self._closed:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Idle connections closed, and each one in use when its answer ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, deque()
        for conn in idle:
            conn.close()

    def request(
        self, head: bytes, body: bytes, connect_timeout: float, due: float, clock
    ) -> Response:
        """Send ``head`` + ``body`` and read the answer's head, due at ``due`` (``clock()``'s).

        ``CannotConnect`` (``ConnectTimeout``) when nothing could be sent; else OSError
        (TimeoutError: no head in time; ``BrokenAnswer``: an answer that is not HTTP;
        ssl.SSLError).
        """
        conn = self.get(connect_timeout)
        try:
            return self._exchange(conn, head, body, due, clock)
        except StaleConnection:
            conn.close()
        return self._exchange(self._connect(connect_timeout), head, body, due, clock)

    def _exchange(self, conn: Connection, head: bytes, body: bytes, due: float, clock):
        sock = conn.sock
        try:
            sock.settimeout(max(due - clock(), 0.001))
            if len(body) < JOIN_BELOW:
                sock.sendall(head + body)
            else:
                sock.sendall(head)
                sock.sendall(body)
            while True:
                status, keep, headers = self._read_head(conn, due, clock)
                if not 100 <= status < 200:
                    return Response(self, conn, status, keep, headers)
                conn.reused = False  # an interim answer (100 Continue): the real one follows
        except (BrokenPipeError, ConnectionResetError) as error:
            conn.close()
            if conn.reused:
                raise StaleConnection(str(error)) from None
            raise
        except BaseException:
            conn.close()
            raise

    def _read_head(self, conn: Connection, due: float, clock):
        data = conn.recv()
        while True:
            end = head_end(data)
            if end is not None:
                head, conn.buffer = data[: end[0]], data[end[1] :]
                return parse_head(head)
            if len(data) > MAX_HEAD_BYTES:
                raise BrokenAnswer(f"an answer's head over {MAX_HEAD_BYTES} bytes")
            # The deadline holds for the whole head, not each read: a dripped head is cut.
            left = due - clock()
            if left <= 0:
                raise TimeoutError("no answer's head in time")
            conn.sock.settimeout(left)
            more = conn.sock.recv(READ_BYTES)
            if not more:
                if not data and conn.reused:
                    raise StaleConnection("closed before answering")
                raise BrokenAnswer("the upstream closed the connection before its answer ended")
            data += more
            conn.reused = False  # a byte came: whatever happens next is no stale connection


_lock = threading.Lock()
_context: ssl.SSLContext | None = None
# URL asked -> (its origin's pool, the request target: path and query).
_targets: dict[str, tuple[Pool, bytes]] = {}
_pools: dict[tuple, Pool] = {}


def _tls_context() -> ssl.SSLContext:
    """The process's TLS context: urllib3's policy, certifi's CA bundle (loaded once)."""
    global _context
    if _context is None:
        with _lock:
            if _context is None:
                context = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED)
                context.check_hostname = True
                context.load_verify_locations(certifi.where())
                context.set_alpn_protocols(["http/1.1"])
                _context = context
    return _context


def target(url: str) -> tuple[Pool, bytes]:
    """The pool of ``url``'s origin and what is asked of it (credentials in a URL are not
    sent, as with urllib3's PoolManager)."""
    found = _targets.get(url)
    if found is not None:
        return found
    parts = urlsplit(url)
    scheme = parts.scheme or "http"
    origin = (scheme, parts.hostname or "", parts.port or (443 if scheme == "https" else 80))
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    with _lock:
        if len(_targets) >= MAX_URLS:
            for pool in _pools.values():
                pool.close()
            _targets.clear()
            _pools.clear()
        pool = _pools.get(origin)
        if pool is None:
            pool = _pools[origin] = Pool(*origin)
        found = _targets[url] = (pool, path.encode("ascii"))
    return found
