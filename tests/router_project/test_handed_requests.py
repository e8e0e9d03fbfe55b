"""A request the poller hands a thread in pieces (router_project.connection_io: handed_pieces,
HandedUnreader) reads, through gunicorn's parser, exactly as the same bytes read at once."""

from gunicorn.config import Config
from gunicorn.http.parser import RequestParser
from gunicorn.http.unreader import SocketUnreader
from hypothesis import given, settings
from hypothesis import strategies as st

from router_project.connection_io import HandedUnreader, handed_pieces


class _Finished:
    """The socket past the bytes handed over: the client sent nothing more."""

    def recv(self, _size):
        return b""


def _read(unreader, read_sizes):
    """What gunicorn's parser and its body reader make of the stream, or the error raised."""
    parser = RequestParser(Config(), _Finished(), ("127.0.0.1", 40000))
    parser.unreader = unreader
    try:
        request = next(parser)
        body = []
        for size in read_sizes:
            body.append(request.body.read(size))
        body.append(request.body.read())
        return (request.method, request.path, request.headers, body, unreader.take_buffered())
    except StopIteration:
        return "stopped"
    except Exception as error:  # noqa: BLE001 - the parser's refusals are compared by type
        return type(error).__name__


def _as_read_at_once(stream: bytes, read_sizes):
    unreader = SocketUnreader(_Finished())
    unreader.unread(stream)
    return _read(unreader, read_sizes)


def _as_handed(pieces, read_sizes):
    unreader = HandedUnreader(_Finished())
    unreader.hand(pieces)
    return _read(unreader, read_sizes)


def _cut(stream: bytes, cuts) -> list:
    bounds = [0, *sorted(cut % (len(stream) + 1) for cut in cuts), len(stream)]
    return [stream[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def _chunked(body: bytes, size: int) -> bytes:
    chunks = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"


@st.composite
def requests(draw):
    body = draw(st.binary(max_size=3000))
    headers = b"Host: router\r\nAuthorization: Bearer rk-test\r\n"
    if draw(st.booleans()):
        framing, sent = b"Transfer-Encoding: chunked\r\n", _chunked(body, draw(st.integers(1, 900)))
    else:
        framing, sent = b"Content-Length: %d\r\n" % len(body), body
    head = b"POST /v1/chat/completions HTTP/1.1\r\n" + headers + framing + b"\r\n"
    pipelined = draw(st.sampled_from([b"", b"GET /v1/models HTTP/1.1\r\nHost: router\r\n\r\n"]))
    stream = head + sent + pipelined
    chunked = b"chunked" in framing
    return stream, handed_pieces(bytearray(stream), len(head), len(head + sent), chunked)


read_sizes = st.lists(st.integers(0, 4000), max_size=4)
cuts = st.lists(st.integers(0, 10_000), max_size=5)


@settings(max_examples=300, deadline=None)
@given(requests(), read_sizes)
def test_a_request_handed_as_the_poller_cuts_it_reads_as_the_same_bytes_read_at_once(
    request, sizes
):
    stream, pieces = request
    assert _as_handed(pieces, sizes) == _as_read_at_once(stream, sizes)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), cuts, read_sizes)
def test_any_bytes_handed_in_pieces_are_parsed_or_refused_as_when_read_at_once(stream, cuts, sizes):
    assert _as_handed(_cut(stream, cuts), sizes) == _as_read_at_once(stream, sizes)


def test_a_large_body_handed_as_head_and_body_reads_as_when_read_at_once():
    body = b'{"model":"auto","messages":[' + b'{"role":"user","content":"x"},' * 20000 + b"{}]}"
    head = b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body)
    pieces = handed_pieces(bytearray(head + body), len(head), len(head + body), False)
    handed = _as_handed(pieces, [len(body)])
    assert handed == _as_read_at_once(head + body, [len(body)])
    assert handed[3][0] == body
