"""An upstream's answer as HTTP/1.1 frames it: the head parsed, the body read to its end.

The reading half of the router's HTTP client (routing/providers/connections.py
sends and pools): a status line and headers parsed without the ``email``
package (http.client's way: a sixth of a call's time under urllib3, profiled), and a
body read as it arrives whatever its framing (Content-Length, chunked, read to
the close), gzip or deflate undone a bounded piece at a time. A connection
goes back to its pool only once its answer was read to its framed end.
Everything malformed is ``BrokenAnswer``; every limit (head, headers, chunk
lines, trailers) holds against a hostile upstream.
"""

from __future__ import annotations

import select
import socket
import zlib

# Bytes asked of the socket at a time, and the most an answer's read returns at once.
READ_BYTES = 65536

# An answer's head (status line and headers) larger than this is refused: http.client's
# limits were 64 KB a line and 100 headers.
MAX_HEAD_BYTES = 65536
MAX_HEADERS = 100

# A chunk-size line longer than this (extensions included) is not a chunk size.
MAX_CHUNK_LINE = 4096

# HTTP's optional white space around a header's value (str.strip would also take \x85, \xa0).
OWS = " \t"


class BrokenAnswer(ConnectionError):
    """The answer cannot be read as HTTP: the connection closed early, or a malformed frame."""


def parse_head(head: bytes) -> tuple[int, bool, dict[str, str]]:
    """(status, keep-alive by default, headers) of an answer's head, without its blank line.

    Header names are lower-cased; a repeated header's values are joined with
    ", " (as urllib3 did); a folded line continues the header before it;
    a line without a colon is ignored. ``BrokenAnswer`` when the status line is
    not HTTP's or the head has too many headers.
    """
    lines = head.split(b"\n")
    status_line = lines[0].rstrip(b"\r")
    version, _, rest = status_line.partition(b" ")
    code = rest[:3]
    if (
        not version.startswith(b"HTTP/")
        or len(code) != 3
        or not code.isdigit()
        or rest[3:4] not in (b"", b" ")
        or not 100 <= int(code) <= 999
    ):
        raise BrokenAnswer(f"not an HTTP status line: {status_line[:80]!r}")
    if len(lines) > MAX_HEADERS + 1:
        raise BrokenAnswer(f"more than {MAX_HEADERS} headers")
    headers: dict[str, str] = {}
    name = None
    for raw in lines[1:]:
        line = raw.rstrip(b"\r").decode("latin-1")
        if line[:1] in (" ", "\t"):
            if name is not None:
                headers[name] = f"{headers[name]} {line.strip(OWS)}".strip(OWS)
            continue
        name, colon, value = line.partition(":")
        if not colon:
            name = None
            continue
        name = name.strip(OWS).lower()
        value = value.strip(OWS)
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return int(code), version != b"HTTP/1.0", headers


def _content_length(value: str | None) -> int | None:
    if value is None:
        return None
    sizes = {part.strip() for part in value.split(",")}
    if len(sizes) != 1 or not (size := sizes.pop()).isdigit():
        raise BrokenAnswer(f"bad content-length {value[:40]!r}")
    return int(size)


class _Decoder:
    """gzip or deflate undone a bounded piece at a time (a small bomb stays small per read)."""

    def __init__(self, encoding: str):
        self._deflate = encoding == "deflate"
        self._z = zlib.decompressobj(zlib.MAX_WBITS | (0 if self._deflate else 16))
        self._tail = b""
        self._started = False

    def decode(self, data: bytes) -> bytes:
        data = self._tail + data
        try:
            out = self._z.decompress(data, READ_BYTES)
        except zlib.error:
            if not self._deflate or self._started:
                raise
            # "deflate" is zlib-wrapped by the standard, raw by some servers.
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._z.decompress(data, READ_BYTES)
        self._started = True
        self._tail = self._z.unconsumed_tail
        return out

    @property
    def pending(self) -> bool:
        return bool(self._tail)


class Connection:
    """One kept-alive connection to an origin, and the bytes read ahead of its answer."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buffer = b""
        self.reused = False

    def recv(self) -> bytes:
        if self.buffer:
            data, self.buffer = self.buffer, b""
            return data
        return self.sock.recv(READ_BYTES)

    def dropped(self) -> bool:
        """Closed by the upstream while idle (or sending unasked): not fit for a request."""
        poller = select.poll()
        poller.register(self.sock, select.POLLIN)
        return bool(poller.poll(0))

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class Response:
    """An answer being read: status, headers, and its body through ``read1``.

    ``read1`` returns what has arrived (decoded), at most ``READ_BYTES``, and
    b"" at the end. ``release`` gives the connection back to its pool when the
    body was read to its framed end, and closes it otherwise.
    """

    def __init__(self, pool, conn: Connection, status: int, keep: bool, headers: dict):
        self.status = status
        self.headers = headers
        self._pool = pool
        self._conn: Connection | None = conn
        self._decoder: _Decoder | None = None
        self._done = False
        self._chunk_left = 0  # bytes of the current chunk still to come
        self._chunk_end = False  # the CRLF after a chunk's data is still to read
        # The socket timeout for the next read that reaches the socket (``settimeout``).
        self._timeout: float | None = None
        connection = headers.get("connection", "").lower()
        self._keep = keep and "close" not in connection or "keep-alive" in connection
        if status in (204, 304):
            self._left: int | None = 0
            self._chunked = False
        else:
            coding = headers.get("transfer-encoding", "").lower()
            self._chunked = coding.rsplit(",", 1)[-1].strip() == "chunked"
            self._left = None if self._chunked else _content_length(headers.get("content-length"))
            if not self._chunked and self._left is None:
                self._keep = False  # read to the close
        if self._left == 0:
            self._done = True

    def decode_as(self, encoding: str) -> None:
        """Undo ``encoding`` (gzip, x-gzip, deflate) as the body is read."""
        self._decoder = _Decoder("deflate" if encoding == "deflate" else "gzip")

    def settimeout(self, seconds: float) -> None:
        """The timeout of the answer's next read from the socket, set on it only when a read
        reaches it: a short answer's body came with its head, and each setting is a system
        call (and the GIL let go)."""
        self._timeout = seconds

    def _recv(self) -> bytes:
        conn = self._conn
        if conn.buffer:
            data, conn.buffer = conn.buffer, b""
            return data
        return self._sock_recv()

    def _sock_recv(self) -> bytes:
        sock = self._conn.sock
        if self._timeout is not None:
            sock.settimeout(self._timeout)
            self._timeout = None
        return sock.recv(READ_BYTES)

    def read1(self, size: int = READ_BYTES) -> bytes:
        decoder = self._decoder
        while True:
            if decoder is not None and decoder.pending:
                out = decoder.decode(b"")
            else:
                raw = self._raw_read1(size)
                if not raw:
                    return b""
                if decoder is None:
                    return raw
                out = decoder.decode(raw)
            if out:
                return out

    def read(self, size: int) -> bytes:
        """Up to ``size`` bytes of the body (fewer only at its end)."""
        chunks = []
        got = 0
        while got < size and (chunk := self.read1(min(size - got, READ_BYTES))):
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _raw_read1(self, size: int) -> bytes:
        if self._done or self._conn is None:
            return b""
        if self._chunked:
            return self._chunk_read1(size)
        data = self._take(size if self._left is None else min(size, self._left))
        if not data:
            if self._left is None:
                self._done = True  # read to the close: the close is its end
                return b""
            raise BrokenAnswer("the upstream closed the connection mid-answer")
        if self._left is not None:
            self._left -= len(data)
            if self._left == 0:
                self._done = True
                self.release()
        return data

    def _take(self, size: int) -> bytes:
        data = self._recv()
        if len(data) > size:
            data, self._conn.buffer = data[:size], data[size:]
        return data

    def _line(self) -> bytes:
        conn = self._conn
        data = self._recv()
        while b"\n" not in data:
            if len(data) > MAX_CHUNK_LINE:
                raise BrokenAnswer("a chunk line too long")
            more = self._sock_recv()
            if not more:
                raise BrokenAnswer("the upstream closed the connection mid-answer")
            data += more
        line, _, conn.buffer = data.partition(b"\n")
        return line.rstrip(b"\r")

    def _chunk_read1(self, size: int) -> bytes:
        if self._chunk_end:
            if self._line():
                raise BrokenAnswer("chunk data longer than its size")
            self._chunk_end = False
        if not self._chunk_left:
            line = self._line().split(b";", 1)[0].strip()
            try:
                self._chunk_left = int(line, 16)
            except ValueError:
                raise BrokenAnswer(f"bad chunk size {line[:20]!r}") from None
            if self._chunk_left < 0 or not line.isalnum():
                raise BrokenAnswer(f"bad chunk size {line[:20]!r}")
            if self._chunk_left == 0:
                trailers = 0
                while line := self._line():  # trailers, up to the blank line
                    trailers += len(line)
                    if trailers > MAX_HEAD_BYTES:
                        raise BrokenAnswer(f"trailers over {MAX_HEAD_BYTES} bytes")
                self._done = True
                self.release()
                return b""
        data = self._take(min(size, self._chunk_left))
        if not data:
            raise BrokenAnswer("the upstream closed the connection mid-answer")
        self._chunk_left -= len(data)
        self._chunk_end = not self._chunk_left
        return data

    def release(self) -> None:
        """Done with the answer: its connection pooled if read to its end, else closed.

        A stream the relay left at its last event (``[DONE]``, ``message_stop``)
        has its end framing still unread; when it has already arrived it is
        read here, without waiting, and the connection kept: each stream would
        otherwise cost the next request a new connection (and TLS handshake).
        """
        conn = self._conn
        if conn is None:
            return
        if not self._done and self._keep and (self._chunked or self._left is not None):
            self._read_what_arrived()
            if self._conn is None:
                return  # read to its end, and pooled
        self._conn = None
        if self._done and self._keep and not conn.buffer:
            self._pool.put(conn)
        else:
            conn.close()

    def _read_what_arrived(self) -> None:
        """Read on, up to ``READ_BYTES`` and without waiting, towards the answer's end."""
        left = READ_BYTES
        try:
            self.settimeout(0)
            while left > 0 and self._conn is not None and not self._done:
                left -= len(self._raw_read1(left)) or left
        except OSError:  # nothing more has arrived (would block), or it broke: closed
            pass

    def close(self) -> None:
        self.release()


def head_end(data: bytes) -> tuple[int, int] | None:
    """Where the head ends and the body begins, or None if the blank line has not come."""
    crlf = data.find(b"\n\r\n")
    lf = data.find(b"\n\n")
    if crlf < 0 and lf < 0:
        return None
    if lf < 0 or 0 <= crlf < lf:
        return crlf, crlf + 3
    return lf, lf + 2
