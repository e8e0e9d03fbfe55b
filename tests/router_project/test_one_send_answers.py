"""An answer of the buffered worker (router_project.connection_io.OneSendResponse) puts the
same bytes on the wire as gunicorn's own Response, its head in the send of its body."""

import pytest
from gunicorn import util
from gunicorn.config import Config
from gunicorn.http.parser import RequestParser
from gunicorn.http.unreader import SocketUnreader
from gunicorn.http.wsgi import Response
from hypothesis import given, settings
from hypothesis import strategies as st

from router_project.connection_io import OneSendResponse


class _Wire:
    """A client's socket: what each send carried."""

    def __init__(self):
        self.sends = []

    def sendall(self, data):
        self.sends.append(bytes(data))

    def recv(self, _size):
        return b""


def _request(method: str, version: str):
    unreader = SocketUnreader(_Wire())
    unreader.unread(f"{method} /v1/chat/completions HTTP/{version}\r\nHost: r\r\n\r\n".encode())
    parser = RequestParser(Config(), _Wire(), ("127.0.0.1", 40000))
    parser.unreader = unreader
    return next(parser)


def _answer(response_class, method, version, status, headers, pieces):
    wire = _Wire()
    response = response_class(_request(method, version), wire, Config())
    response.start_response(status, headers)
    for piece in pieces:
        response.write(piece)
    response.close()
    return wire.sends


@pytest.fixture(autouse=True)
def _one_date(monkeypatch):
    monkeypatch.setattr(util, "http_date", lambda *_: "Mon, 07 Dec 2026 03:00:00 GMT")


answers = st.tuples(
    st.sampled_from(["POST", "GET", "HEAD"]),
    st.sampled_from(["1.1", "1.0"]),
    st.sampled_from(["200 OK", "204 No Content", "304 Not Modified", "404 Not Found"]),
    st.lists(st.binary(max_size=300), max_size=3),
    st.sampled_from(["declared", "short", "long", "none"]),
)


@settings(max_examples=300, deadline=None)
@given(answers)
def test_an_answer_leaves_as_the_same_bytes_as_gunicorns(answer):
    method, version, status, pieces, length = answer
    body = sum(len(piece) for piece in pieces)
    declared = {"declared": body, "short": max(body - 5, 0), "long": body + 5}.get(length)
    headers = [("Content-Type", "application/json"), ("X-Request-Id", "20261207T030000Z-1")]
    if declared is not None:
        headers.append(("Content-Length", str(declared)))
    with_hook = _answer(OneSendResponse, method, version, status, headers, pieces)
    as_gunicorn = _answer(Response, method, version, status, headers, pieces)
    assert b"".join(with_hook) == b"".join(as_gunicorn)


def test_a_json_answer_leaves_in_one_send():
    body = b'{"id":"chatcmpl-1","choices":[]}'
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    sends = _answer(OneSendResponse, "POST", "1.1", "200 OK", headers, [body])
    assert len(sends) == 1
    assert sends[0].endswith(b"\r\n\r\n" + body)
