"""gunicorn's threaded worker, with each request read whole by the main loop before a thread
sees it (as nginx buffers for its upstream).

gthread hands a connection to a thread as soon as its first bytes arrive, and
the thread then blocks reading the rest of the head and the body: a client
sending a byte a second holds a thread for as long as it likes. With 256 such
clients on the default 2 x 128 threads, 8 of 20 normal requests were answered
within 2 s; with 400, none (issue 43). Here the worker's poller reads every
connection without blocking into a buffer of its own until the request is
whole (its head, then its body by ``Content-Length`` or to the end of its
chunks), and only then gives it to a thread, with the bytes already read:
a thread never waits on a client's request, only on the upstream and on a
client reading its answer. The request is handed over as its head, its body
and what followed it, each read by the thread as it is
(router_project/connection_io.py): gunicorn's parser scans the head alone,
and the body is copied once on its way to Django instead of about ten times
through gunicorn's read buffer (0.24 ms down to 0.08 ms for the 368 KB bench
body, measured in process).

Bounded, so that buffering is not the new way to hold a worker:

- the head: ``HEAD_BYTES`` at most, else a 431 (a 414 when the request line
  alone is over gunicorn's ``limit_request_line``); within it, gunicorn's own
  parser and limits apply, and answer in JSON (router_project/wsgi_edges.py);
- the body: ``ROUTER_MAX_BODY_BYTES`` (a declared length over it, or chunks
  adding up to more), else the router's 413, naming the limit;
- the time: a request must arrive whole within ``ROUTER_REQUEST_READ_SECONDS``
  of its first byte, else a 408 and the connection is closed; a kept-alive
  connection with nothing sent is closed after gunicorn's ``keepalive``;
- the memory: at most ``ROUTER_WORKER_BUFFER_BYTES`` buffered in a worker at
  once; the request that would go over it is answered 503 and closed.

Every refusal is JSON in the OpenAI error shape (with Anthropic's
``"type": "error"``), the connection closed after it. Keep-alive and
pipelining work: bytes read past the end of one request start the next.
TLS and HTTP/2 are left to gthread as it is (the router serves plain HTTP/1.1
behind a proxy that terminates TLS).

A plain request (the forms agents and nginx send: no chunked body, no
``Expect``, nothing odd) is then served without gunicorn's parser, environ
and response objects (router_project/lean_http.py): the head the poller
scanned is parsed once more, strictly, into the environ gunicorn would make,
and the answer leaves as gunicorn's bytes, with its hooks, keep-alive rules
and access line; anything else goes gunicorn's way as before.

Three more costs of gthread per request are cut (docs/deployment.md, "The front"):
its thread pool's future, condition and callbacks (router_project/worker_threads.py),
the send of each answer's head apart from its body (router_project/connection_io.py),
and its heartbeat: gthread's loop tells the arbiter it is alive (``notify``: the
time of a file set, a system call) on each of its turns, two or three a
request; here at most once every ``HEARTBEAT_SECONDS``. The loop turns at
least once a second when idle (its poll's timeout), so the arbiter's view is
never much older than gthread's, far inside ``timeout``; a worker whose loop
is stuck stops notifying and is killed as before.

A new connection is shared with the other workers (router_project/accept_share.py):
a worker holding more connections than another accepting one leaves its listener
out of its poller for a moment, so that a burst of connections opened at once is
not all accepted by the worker that wakes first; after 10 ms it takes them anyway.
"""

from __future__ import annotations

import errno
import re
import selectors
import socket
import time
from functools import partial

from gunicorn.http import wsgi
from gunicorn.workers.gthread import TConn, ThreadWorker

from router_project.accept_share import SharedAccept
from router_project.connection_io import HandedUnreader, OneSendResponse, handed_pieces
from router_project.lean_exchange import PlainExchange
from router_project.lean_http import PlainSettings, plain_request
from router_project.worker_threads import Finished, Threads
from router_project.wsgi_edges import json_error_bytes

# A head this large is no agent's: 64 KB holds gunicorn's default request line
# (4 KB) and a few dozen long headers.
HEAD_BYTES = 64 * 1024
# One read of a connection, at most (a large body arrives in a few of these).
READ_BYTES = 256 * 1024
# A refused client's remaining bytes are read and dropped this long, so that it
# sees its answer rather than a reset.
LINGER_SECONDS = 2.0
LINGER_BYTES = 1024 * 1024

# How often the loop tells the arbiter it is alive, at most (a quarter of its timeout, if
# less): gunicorn asks for once per ``timeout / 2``, gthread does it on every turn.
HEARTBEAT_SECONDS = 1.0

_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]+)[ \t]*(?:;[^\r\n]*)?\r\n")


def _received(conn, size: int) -> bytes | None:
    """What a readable connection holds (up to ``size`` bytes), b"" once the client is gone
    or the socket failed, None when nothing was there after all."""
    try:
        return conn.sock.recv(size)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""


class Incoming:
    """What the worker has read of a connection's next request."""

    def __init__(self, data: bytes, idle_until: float):
        self.data = bytearray(data)
        self.idle_until = idle_until  # nothing sent yet: closed quietly then
        self.deadline = None  # set by the first byte
        self.head_end = None  # the head's length, its blank line included
        self.length = None  # the body's declared length
        self.chunked = False
        self.scanned = 0  # a chunked body: how far its framing is checked
        self.decoded = 0  # a chunked body: its bytes without the framing
        self.continued = False  # "100 Continue" sent


class BufferedThreadWorker(SharedAccept, PlainExchange, ThreadWorker):
    """gthread, the request buffered whole by the poller first (see the module's doc)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.incoming: dict[TConn, Incoming] = {}
        self.ours: set[TConn] = set()  # connections read by the poller (not TLS ones)
        self.lingering: dict[TConn, float] = {}
        self.buffered = 0
        self.limits = None
        self.next_heartbeat = 0.0

    def _limits(self):
        if self.limits is None:
            # Read once the application (and so Django's settings) is loaded.
            from django.conf import settings

            self.limits = (
                settings.ROUTER_MAX_BODY_BYTES,
                settings.ROUTER_REQUEST_READ_SECONDS,
                settings.ROUTER_WORKER_BUFFER_BYTES,
            )
        return self.limits

    def init_process(self):
        # gthread makes its answers through wsgi.create, which has no setting for their class.
        wsgi.Response = OneSendResponse
        self.plain = PlainSettings(self.cfg)
        super().init_process()

    def notify(self):
        now = time.monotonic()
        if now >= self.next_heartbeat:
            # self.timeout is already half the arbiter's (gunicorn's Arbiter.spawn_worker).
            self.next_heartbeat = now + min(HEARTBEAT_SECONDS, self.timeout / 2)
            super().notify()

    # Threads meet whole requests only.

    def get_thread_pool(self):
        return Threads(self.cfg.threads, self._serve)

    def enqueue_req(self, conn):
        self.tpool.submit(conn)

    def _serve(self, conn):
        """In a thread: the request, then the connection back to the loop."""
        try:
            keep = self.handle(conn)
        except BaseException:  # gthread's handle answers its own errors; this is the rest
            keep = False
        self.method_queue.defer(self._served, conn, keep)

    def _served(self, conn, keep):
        self.tpool.busy -= 1
        self.finish_request(conn, Finished(keep))

    # Connections come to the poller, not to a thread.

    def accept_one(self, listener):
        if self.cfg.is_ssl:
            return ThreadWorker.accept(self, listener)  # gthread's own, past SharedAccept's
        try:
            client, address = listener.accept()
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        conn = TConn(self.cfg, client, address, listener.getsockname())
        self._read_next(conn, b"")

    def finish_request(self, conn, fs):
        if conn not in self.ours:
            return super().finish_request(conn, fs)
        keep = fs.result()
        if keep and self.alive:
            # Bytes the client sent past that request are the start of its next one.
            self._read_next(conn, conn.parser.unreader.take_buffered())
            return
        self.ours.discard(conn)
        self.nr_conns -= 1
        conn.close(graceful=bool(keep))

    def handle(self, conn):
        if conn in self.ours and conn.handoff is not None:
            (head, body, pipelined), conn.handoff = conn.handoff, None
            conn.data_ready = True  # the thread has no data to wait for
            conn.init()
            if not isinstance(conn.parser.unreader, HandedUnreader):
                conn.parser.unreader = HandedUnreader(conn.sock)
            request = plain_request(self.plain, head, body, conn.client)
            if request is not None:
                conn.parser.unreader.hand([pipelined])
                return self._handle_plain(conn, request)
            conn.parser.unreader.hand([head, body, pipelined])
        return super().handle(conn)

    # Reading a request whole, without blocking.

    def _read_next(self, conn, data: bytes):
        conn.sock.setblocking(False)
        conn.handoff = None
        self.ours.add(conn)
        idle = time.monotonic() + (self.cfg.keepalive or 5)
        incoming = self.incoming[conn] = Incoming(b"", idle)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, conn))
        if data:
            self._took(conn, incoming, data)

    def _on_readable(self, conn, _sock):
        incoming = self.incoming.get(conn)
        if incoming is None:
            return
        data = _received(conn, READ_BYTES)
        if data is None:
            return
        if not data:  # the client went away
            self._drop(conn)
            return
        self._took(conn, incoming, data)

    def _took(self, conn, incoming: Incoming, data: bytes):
        body_limit, read_seconds, buffer_limit = self._limits()
        if self.buffered + len(data) > buffer_limit:
            self._refuse(
                conn,
                503,
                "Service Unavailable",
                "The router's worker is holding as many request bytes as it may "
                f"(ROUTER_WORKER_BUFFER_BYTES={buffer_limit}): retry shortly.",
                "server_busy",
            )
            return
        if incoming.deadline is None:
            incoming.deadline = time.monotonic() + read_seconds
        incoming.data += data
        self.buffered += len(data)
        end = self._request_end(conn, incoming, body_limit)
        if end is not None:
            self._hand_over(conn, incoming, end)

    def _request_end(self, conn, incoming: Incoming, body_limit: int):
        """Where the buffered request ends, or None while it is not whole yet (or refused)."""
        data = incoming.data
        if incoming.head_end is None:
            found = data.find(b"\r\n\r\n", 0, HEAD_BYTES + 4)
            if found < 0:
                if len(data) > HEAD_BYTES:
                    self._refuse_head(conn, incoming)
                return None
            incoming.head_end = found + 4
            if not self._read_head(conn, incoming, body_limit):
                return None
        if incoming.chunked:
            end = self._chunks_end(conn, incoming, body_limit)
        else:
            end = incoming.head_end + incoming.length
            end = end if len(data) >= end else None
        if end is None and conn in self.incoming:
            self._continue(conn, incoming)
        return end

    def _read_head(self, conn, incoming: Incoming, body_limit: int) -> bool:
        """Learn the body's framing; False when the request was refused."""
        head = bytes(incoming.data[: incoming.head_end]).decode("latin-1")
        lengths, codings = [], []
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                lengths.append(value.strip())
            elif name == "transfer-encoding":
                codings.append(value.strip().lower())
        incoming.chunked = any("chunked" in coding for coding in codings)
        incoming.length = 0
        if not incoming.chunked and len(lengths) == 1 and lengths[0].isdigit():
            incoming.length = int(lengths[0])
        # Anything else odd (two lengths, a bad one): gunicorn's parser refuses it in JSON.
        if incoming.length > body_limit:
            self._refuse_body(conn, incoming.length, body_limit)
            return False
        incoming.scanned = incoming.head_end
        return True

    def _chunks_end(self, conn, incoming: Incoming, body_limit: int):
        """Follow a chunked body's framing; its end (the last chunk and trailers) or None."""
        data = incoming.data
        while True:
            if incoming.decoded is None:  # the last chunk read: its trailers end at a blank line
                end = data.find(b"\r\n\r\n", incoming.scanned - 2)
                return end + 4 if end >= 0 else None
            size_line = _CHUNK_SIZE.match(data, incoming.scanned)
            if size_line is None:
                if len(data) - incoming.scanned > 1024 or b"\n" in data[incoming.scanned :]:
                    return len(data)  # not chunked as it says: gunicorn's parser answers 400
                return None
            size = int(size_line.group(1), 16)
            if size == 0:
                incoming.scanned = size_line.end()
                incoming.decoded = None
                continue
            if incoming.decoded + size > body_limit:
                self._refuse_body(conn, None, body_limit)
                return None
            following = size_line.end() + size + 2
            if len(data) < following:
                return None
            incoming.decoded += size
            incoming.scanned = following

    def _continue(self, conn, incoming: Incoming):
        """Answer a client that waits for "100 Continue" before its body (curl does)."""
        if incoming.continued or len(incoming.data) > incoming.head_end:
            return
        head = bytes(incoming.data[: incoming.head_end])
        if not re.search(rb"(?im)^expect:[ \t]*100-continue[ \t]*\r$", head):
            return
        incoming.continued = True
        try:
            conn.sock.send(b"HTTP/1.1 100 Continue\r\n\r\n")
        except OSError:
            pass
        # Sent: gunicorn must not send it again once the body is here.
        without = re.sub(rb"(?im)^expect:[^\r\n]*\r\n", b"", head)
        self.buffered -= len(head) - len(without)
        incoming.data[: incoming.head_end] = without
        incoming.head_end = len(without)
        incoming.scanned = incoming.head_end

    def _hand_over(self, conn, incoming: Incoming, end: int):
        self.poller.unregister(conn.sock)
        del self.incoming[conn]
        self.buffered -= len(incoming.data)
        conn.handoff = handed_pieces(incoming.data, incoming.head_end, end, incoming.chunked)
        self.enqueue_req(conn)

    # Refusals and deadlines.

    def _refuse_head(self, conn, incoming: Incoming):
        line_end = incoming.data.find(b"\r\n")
        if line_end < 0 or line_end > self.cfg.limit_request_line:
            self._refuse(conn, 414, "Request-URI Too Long", "The request line is too long.")
        else:
            self._refuse(
                conn,
                431,
                "Request Header Fields Too Large",
                f"The request's headers are over {HEAD_BYTES} bytes.",
            )

    def _refuse_body(self, conn, size, limit):
        from routing.errors import body_too_large_error

        error = body_too_large_error(size, limit)
        self._refuse(conn, 413, "Request Entity Too Large", error.message, error.code)

    def _refuse(self, conn, status, reason, message, code=None):
        """Answer in JSON and close, reading what the client still sends for a moment."""
        incoming = self.incoming.pop(conn, None)
        if incoming is not None:
            self.buffered -= len(incoming.data)
        try:
            conn.sock.send(json_error_bytes(status, reason, message, code))
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._close(conn)
            return
        self.poller.modify(conn.sock, selectors.EVENT_READ, partial(self._on_lingering, conn))
        self.lingering[conn] = time.monotonic() + LINGER_SECONDS

    def _on_lingering(self, conn, _sock):
        if _received(conn, LINGER_BYTES) == b"":
            self._close(conn)

    def _drop(self, conn):
        incoming = self.incoming.pop(conn, None)
        if incoming is not None:
            self.buffered -= len(incoming.data)
        self._close(conn)

    def _close(self, conn):
        self.lingering.pop(conn, None)
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        self.ours.discard(conn)
        self.nr_conns -= 1
        conn.close()

    def murder_keepalived(self, force=False):
        """Besides gthread's kept-alive connections: requests past their deadline, idle
        connections, refused clients done lingering (all of them when ``force``)."""
        super().murder_keepalived(force)
        now = time.monotonic()
        for conn, incoming in list(self.incoming.items()):
            if force or (incoming.deadline is None and not self.alive):
                self._drop(conn)
            elif incoming.deadline is None:
                if now > incoming.idle_until:
                    self._drop(conn)
            elif now > incoming.deadline:
                _body_limit, read_seconds, _buffer = self._limits()
                self._refuse(
                    conn,
                    408,
                    "Request Timeout",
                    f"The request did not arrive whole within {read_seconds} s "
                    "(ROUTER_REQUEST_READ_SECONDS).",
                    "request_timeout",
                )
        for conn, until in list(self.lingering.items()):
            if force or now > until:
                self._close(conn)
