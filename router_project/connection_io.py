"""The buffered worker's reads and writes of a connection, in gunicorn's classes' shapes.

A request the poller read whole (router_project/buffered_worker.py) reaches
its thread in pieces, read by gunicorn's parser as they are
(``handed_pieces``, ``HandedUnreader``); an answer leaves in one send
(``OneSendResponse``). Each gives gunicorn's code the same bytes it had
before, with fewer copies and sends.
"""

from __future__ import annotations

import collections

from gunicorn import util
from gunicorn.http import wsgi
from gunicorn.http.unreader import SocketUnreader


class HandedUnreader(SocketUnreader):
    """gunicorn's reader of a connection, holding the pieces the poller read before the socket.

    The stream is what gunicorn's buffer holds, then the pieces, then the
    socket, as if the pieces had been read from it. A read of the next piece
    (the head, by the parser; a whole body, by gunicorn's body reader) is that
    piece itself, not a copy through the buffer.
    """

    def __init__(self, sock):
        super().__init__(sock)
        self.pieces = collections.deque()

    def hand(self, pieces):
        self.pieces.extend(piece for piece in pieces if piece)

    def chunk(self, size_hint=None):
        if self.pieces:
            return self.pieces.popleft()
        return super().chunk(size_hint)

    def read(self, size=None, read_ahead=None):
        pieces = self.pieces
        # seek returns the buffer's length: nothing buffered comes before the piece.
        if pieces and (size is None or size == len(pieces[0])) and not self.buf.seek(0, 2):
            return pieces.popleft()
        return super().read(size, read_ahead)

    def take_buffered(self):
        held = super().take_buffered() + b"".join(self.pieces)
        self.pieces.clear()
        return held


def handed_pieces(data: bytearray, head_end: int, end: int, chunked: bool) -> tuple:
    """A request read whole, as the pieces its thread reads (``HandedUnreader``, or the lean
    exchange of router_project/lean_http.py): its head, its body, and what was pipelined
    behind it (each possibly empty).

    A body of declared length is a view of the poller's buffer, not a copy:
    gunicorn's body reader copies it once, into the bytes Django reads. A
    chunked one is bytes, as gunicorn's chunk parser adds to what it reads.
    """
    with memoryview(data) as view:
        body = view[head_end:end]
        return bytes(view[:head_end]), bytes(body) if chunked else body, bytes(view[end:])


class _HeadKept:
    """The socket as gunicorn's ``send_headers`` sees it for ``OneSendResponse``: the head is
    kept, not sent."""

    def sendall(self, data):
        self.head = data


class OneSendResponse(wsgi.Response):
    """gunicorn's HTTP/1.1 answer, its head sent in the same send as the first bytes of its body.

    gunicorn sends the head, then the body: for every JSON answer two sends,
    two segments the client reads in turn. The same bytes leave here in one
    send. An answer with no body bytes to send with it (HEAD, 204, an empty
    body) or a chunked one is sent as gunicorn sends it.
    """

    head = None  # made, waiting for the body's first bytes

    def write(self, arg):
        if (
            self.headers_sent
            or self.chunked
            or self._omits_body
            or type(arg) is not bytes
            or not arg
        ):
            return super().write(arg)
        sock, self.sock = self.sock, _HeadKept()
        try:
            self.send_headers()
            self.head = self.sock.head
        finally:
            self.sock = sock
        try:
            super().write(arg)
        finally:
            head, self.head = self.head, None
            if head is not None:  # no body bytes went with it: over the declared length
                util.write(self.sock, head)

    def _emit_body(self, data):
        head, self.head = self.head, None
        super()._emit_body(data if head is None else head + data)
