"""The buffered worker's lean exchange (router_project.lean_http, lean_exchange) against
gunicorn's own: the same environ, keep-alive decision, bytes on the wire and access line, or
the request left to gunicorn."""

import logging
import os
import re
from datetime import timedelta

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger
from gunicorn.http import wsgi
from gunicorn.http.parser import RequestParser
from gunicorn.http.unreader import SocketUnreader
from gunicorn.workers.gthread import TConn
from hypothesis import given, settings
from hypothesis import strategies as st

from router_project.connection_io import OneSendResponse
from router_project.lean_exchange import log_access
from router_project.lean_http import PlainAnswer, PlainSettings, plain_environ, plain_request

SERVER = ("127.0.0.1", 8000)
TRUSTED, UNTRUSTED = ("127.0.0.1", 40000), ("10.1.2.3", 40001)


class _Wire:
    """A client's socket: the bytes sent to it."""

    def __init__(self):
        self.sent = b""

    def sendall(self, data):
        self.sent += bytes(data)

    def send(self, data):
        self.sent += bytes(data)
        return len(data)

    def recv(self, _size):
        return b""


def _gunicorns(cfg, stream: bytes, client, sock):
    """gunicorn's request and environ (as gthread's handle_request makes it), or the error."""
    unreader = SocketUnreader(sock)
    unreader.unread(stream)
    parser = RequestParser(cfg, sock, client)
    parser.unreader = unreader
    try:
        request = next(parser)
        response, environ = wsgi.create(request, sock, client, SERVER, cfg)
    except Exception as error:  # noqa: BLE001 - a refusal: the lean parser must leave it
        return None, type(error).__name__
    environ["wsgi.multithread"] = True
    return request, environ


def _comparable(environ: dict) -> dict:
    """The environ with its file-like and callable entries as what they hold or are."""
    kept = dict(environ)
    kept["wsgi.input"] = environ["wsgi.input"].read()
    kept["wsgi.errors"] = type(environ["wsgi.errors"])
    kept["wsgi.early_hints"] = callable(environ["wsgi.early_hints"])
    return kept


methods = st.sampled_from(["GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "get", "CONNECT"])
path_parts = st.sampled_from(
    ["v1", "chat", "completions", "%2F", "%41b", "caf%C3%A9", "a%zz", "~x", "a+b", "", ".."]
)
paths = st.lists(path_parts, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))
queries = st.sampled_from(["", "?", "?a=1", "?a=1&b=%20", "?q=a?b", "#frag", "?x#y"])
targets = st.one_of(
    st.tuples(paths, queries).map("".join),
    st.sampled_from(["*", "//double", "http://router/v1/models", "router:443", "/a b", "/é"]),
)
versions = st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.1 ", "http/1.1"])
header_lines = st.sampled_from(
    [
        "Host: router",
        "Host: router:8000",
        "Authorization: Bearer rk-test",
        "Authorization: Basic dXNlcjpwYXNz",
        "Content-Type: application/json",
        "Connection: close",
        "Connection: keep-alive",
        "Connection: Keep-Alive, Upgrade",
        "connection:  close \t",
        'User-Agent: claude-cli/1.0 "quoted"',
        "Referer: https://example.com/",
        "X-Forwarded-For: 10.0.0.1, 10.0.0.2",
        "X-Forwarded-Proto: https",
        "X-Forwarded-Proto: http",
        "X-Forwarded-Ssl: on",
        "Accept: */*",
        "Accept:  text/event-stream",
        "X-Empty:",
        "X_Underscore: 1",
        "Expect: 100-continue",
        "Transfer-Encoding: chunked",
        "Upgrade: websocket",
        "Content-Length: 3",
        "Content-Length: +3",
        " Folded: 1",
        "Bad Name: 1",
        "NoColon",
        "X-High: caf\xe9",
        "X-Control: a\x01b",
        "X-Long: " + "x" * 9000,
    ]
)


@st.composite
def requests(draw):
    head_lines = draw(st.lists(header_lines, max_size=8))
    body = draw(st.sampled_from([b"", b"abc", b'{"model":"auto"}']))
    if draw(st.booleans()):
        head_lines.append(f"Content-Length: {len(body)}")
    line = f"{draw(methods)} {draw(targets)} {draw(versions)}"
    head = "\r\n".join([line, *head_lines]) + "\r\n\r\n"
    return head.encode("latin-1"), body


@pytest.fixture(scope="module")
def cfg():
    return Config()


@settings(max_examples=1500, deadline=None)
@given(requests(), st.sampled_from([TRUSTED, UNTRUSTED]))
def test_a_plain_request_has_gunicorns_environ_and_keep_alive_or_is_left_to_gunicorn(
    cfg, request, client
):
    head, body = request
    sock = _Wire()
    plain = plain_request(PlainSettings(cfg), head, memoryview(body), client)
    if plain is None:
        return
    theirs, environ = _gunicorns(cfg, head + body, client, sock)
    assert theirs is not None, f"gunicorn refuses it: {environ}"
    ours = plain_environ(PlainSettings(cfg), plain, PlainAnswer(plain, sock), sock, client, SERVER)
    assert _comparable(ours) == _comparable(environ)
    assert plain.should_close() == theirs.should_close()
    assert plain.headers == theirs.headers


@pytest.mark.parametrize(
    "line",
    [
        "Host: 127.0.0.1:8000",
        "Authorization: Bearer rk-test",
        "Content-Type: application/json",
        "X-Forwarded-For: 10.0.0.1",
        "X-Forwarded-Proto: https",
        "Accept: text/event-stream",
        "User-Agent: OpenAI/Python 1.0",
        "Connection: close",
    ],
)
def test_a_request_as_agents_and_nginx_send_it_is_taken_by_the_lean_parser(cfg, line):
    body = b'{"model":"auto","messages":[]}'
    head = (
        f"POST /v1/chat/completions?x=1 HTTP/1.1\r\n{line}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    assert plain_request(PlainSettings(cfg), head, memoryview(body), TRUSTED) is not None


def test_a_body_other_than_the_declared_length_is_left_to_gunicorn(cfg):
    head = b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 5\r\n\r\n"
    assert plain_request(PlainSettings(cfg), head, memoryview(b"abc"), TRUSTED) is None


@pytest.mark.parametrize(
    "setting, value",
    [("proxy_protocol", "v1"), ("strip_header_spaces", True), ("http2_cleartext", "upgrade")],
)
def test_settings_that_change_gunicorns_reading_leave_every_request_to_it(setting, value):
    changed = Config()
    changed.set(setting, value)
    head = b"GET /v1/models HTTP/1.1\r\nHost: router\r\n\r\n"
    assert plain_request(PlainSettings(changed), head, memoryview(b""), TRUSTED) is None


# The answers.

DATE = re.compile(rb"\r\nDate: [^\r]*\r\n")


def _request(method: str, version: str):
    unreader = SocketUnreader(_Wire())
    unreader.unread(f"{method} /v1/chat/completions HTTP/{version}\r\nHost: r\r\n\r\n".encode())
    parser = RequestParser(Config(), _Wire(), TRUSTED)
    parser.unreader = unreader
    return next(parser)


def _answer(make, method, version, status, headers, pieces, closing):
    """The bytes sent, whether the connection closes after them, and the bytes counted."""
    wire = _Wire()
    answer = make(_request(method, version), wire)
    if closing:
        answer.force_close()
    try:
        answer.start_response(status, headers)
        for piece in pieces:
            answer.write(piece)
        answer.close()
    except Exception as error:  # noqa: BLE001 - the application's mistakes, compared by type
        return type(error).__name__, DATE.sub(b"\r\nDate: -\r\n", wire.sent)
    return (
        DATE.sub(b"\r\nDate: -\r\n", wire.sent),
        answer.should_close(),
        answer.sent,
        answer.headers,
    )


def _plain_answer(request, wire):
    plain = plain_request(
        PlainSettings(Config()),
        f"{request.method} {request.uri} HTTP/{request.version[0]}.{request.version[1]}\r\n"
        "Host: r\r\n\r\n".encode(),
        memoryview(b""),
        TRUSTED,
    )
    return PlainAnswer(plain, wire)


app_headers = st.lists(
    st.sampled_from(
        [
            ("Content-Type", "application/json"),
            ("Content-Type", "text/event-stream"),
            ("X-Request-Id", " 20261207T030000Z-1\t"),
            ("Cache-Control", "no-cache"),
            ("Connection", "keep-alive"),
            ("Connection", "Upgrade"),
            ("Upgrade", "websocket"),
            ("Server", "django"),
            ("Date", "yesterday"),
            ("Transfer-Encoding", "chunked"),
            ("Bad Name", "x"),
            ("X-Bad", "a\r\nb"),
            ("X-High", "caf\xe9"),
        ]
    ),
    max_size=5,
)
answers = st.tuples(
    st.sampled_from(["POST", "GET", "HEAD"]),
    st.sampled_from(["1.1", "1.0"]),
    st.sampled_from(["200 OK", "204 No Content", "304 Not Modified", "404 Not Found", "101 X"]),
    app_headers,
    st.lists(st.binary(max_size=300), max_size=3),
    st.sampled_from(["declared", "short", "long", "none", "bad"]),
    st.booleans(),
)


@settings(max_examples=1000, deadline=None)
@given(answers)
def test_an_answer_leaves_as_gunicorns_bytes_with_its_keep_alive_decision(answer):
    method, version, status, headers, pieces, length, closing = answer
    body = sum(len(piece) for piece in pieces)
    declared = {"declared": body, "short": max(body - 5, 0), "long": body + 5, "bad": "1x"}
    headers = list(headers)
    if length in declared:
        headers.append(("Content-Length", str(declared[length])))
    args = (method, version, status, headers, pieces, closing)
    as_gunicorn = _answer(lambda req, wire: OneSendResponse(req, wire, Config()), *args)
    assert _answer(_plain_answer, *args) == as_gunicorn


def test_an_answer_of_known_length_leaves_in_one_send():
    sends = []

    class Sends(_Wire):
        def sendall(self, data):
            sends.append(bytes(data))

    answer = _plain_answer(_request("POST", "1.1"), Sends())
    body = b'{"id":"chatcmpl-1"}'
    answer.start_response("200 OK", [("Content-Length", str(len(body)))])
    answer.write(body)
    answer.close()
    assert len(sends) == 1
    assert sends[0].endswith(b"\r\n\r\n" + body)


def test_a_streamed_answer_leaves_chunk_by_chunk_as_the_application_yields():
    wire = _Wire()
    answer = _plain_answer(_request("POST", "1.1"), wire)
    answer.start_response("200 OK", [("Content-Type", "text/event-stream")])
    answer.write(b"data: 1\n\n")
    assert wire.sent.endswith(b"\r\n\r\n9\r\ndata: 1\n\n\r\n")
    answer.write(b"data: 2\n\n")
    assert wire.sent.endswith(b"\r\n9\r\ndata: 2\n\n\r\n")
    answer.close()
    assert wire.sent.endswith(b"\r\n0\r\n\r\n")


# The access line.


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


OWN_FORMAT = '%(h)s "%(r)s" %(s)s %(b)s %(D)s %({content-length}o)s %({host}i)s %({path_info}e)s'


@settings(max_examples=300, deadline=None)
@given(
    requests(),
    st.sampled_from(["200 OK", "404 Not Found", "500 Internal Server Error"]),
    st.sampled_from([None, OWN_FORMAT]),
)
def test_the_access_line_is_gunicorns_in_its_default_format_or_an_operators(
    request, status, line_format
):
    head, body = request
    cfg = Config()
    cfg.set("accesslog", "-")
    if line_format:
        cfg.set("access_log_format", line_format)
    log = Logger(cfg)
    lines = _Lines()
    log.access_log.handlers = [lines]
    log.now = lambda: "[07/Dec/2026:03:00:00 +0000]"
    sock = _Wire()
    plain = plain_request(PlainSettings(cfg), head, memoryview(body), TRUSTED)
    if plain is None:
        return
    answer = PlainAnswer(plain, sock)
    environ = plain_environ(PlainSettings(cfg), plain, answer, sock, TRUSTED, SERVER)
    answer.start_response(status, [("Content-Length", "2")])
    answer.write(b"{}")
    took = timedelta(microseconds=1234)
    log_access(log, PlainSettings(cfg), answer, plain, environ, took)
    theirs, their_environ = _gunicorns(cfg, head + body, TRUSTED, sock)
    response = wsgi.Response(theirs, sock, cfg)
    response.start_response(status, [("Content-Length", "2")])
    response.write(b"{}")
    log.access(response, theirs, their_environ, took)
    assert lines.lines[0] == lines.lines[1]


# The worker's thread, from the handed request to the keep-alive decision.


class _Client(_Wire):
    """A connected client's socket, as gunicorn's error answers and closes use it."""

    def setblocking(self, _flag):
        pass

    def gettimeout(self):
        return None

    def settimeout(self, _seconds):
        pass

    def shutdown(self, _how):
        self.sent += b"<FIN>"

    def close(self):
        pass


def _json_app(environ, start_response):
    answer = b'{"read":%d}' % len(environ["wsgi.input"].read())
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", "10")])
    return [answer]


def _stream_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/event-stream")])
    yield b"data: 1\n\n"
    yield b"data: 2\n\n"


def _failing_app(environ, start_response):
    raise RuntimeError("the view failed")


def _failing_stream_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/event-stream")])
    yield b"data: 1\n\n"
    raise RuntimeError("the stream failed")


def _bad_header_app(environ, start_response):
    start_response("200 OK", [("X-Bad", "a\r\nb")])
    return [b"{}"]


def _served(stream: bytes, head_end: int, app, max_requests: int, lean: bool):
    """What the buffered worker's thread sends, keeps, logs and leaves for the next request."""
    from router_project.buffered_worker import BufferedThreadWorker
    from router_project.connection_io import handed_pieces

    cfg = Config()
    cfg.set("accesslog", "-")
    cfg.set("errorlog", os.devnull)
    cfg.set("max_requests", max_requests)
    log = Logger(cfg)
    lines = _Lines()
    log.access_log.handlers = [lines]
    log.now = lambda: "[07/Dec/2026:03:00:00 +0000]"
    worker = BufferedThreadWorker(0, os.getppid(), [], None, 30, cfg, log)
    worker.wsgi = app
    worker.plain = PlainSettings(cfg)
    worker.plain.usable = lean
    sock = _Client()
    conn = TConn(cfg, sock, TRUSTED, SERVER)
    worker.ours.add(conn)
    end = len(stream) - len(PIPELINED) if stream.endswith(PIPELINED) else len(stream)
    conn.handoff = handed_pieces(bytearray(stream), head_end, end, False)
    kept_as = wsgi.Response
    wsgi.Response = OneSendResponse  # as the worker's init_process sets it
    try:
        keep = worker.handle(conn)
    finally:
        wsgi.Response = kept_as
        worker.tmp.close()
    leftover = conn.parser.unreader.take_buffered() if keep else None
    sent = DATE.sub(b"\r\nDate: -\r\n", sock.sent)
    return sent, keep, lines.lines, leftover, worker.nr, worker.alive


PIPELINED = b"GET /v1/models HTTP/1.1\r\nHost: r\r\n\r\n"
apps = st.sampled_from([_json_app, _stream_app, _failing_app, _failing_stream_app, _bad_header_app])


@settings(max_examples=400, deadline=None)
@given(requests(), apps, st.booleans(), st.sampled_from([0, 1]))
def test_the_workers_thread_sends_keeps_and_logs_as_gunicorns_way_does(
    request, app, pipelined, max_requests
):
    head, body = request
    stream = head + body + (PIPELINED if pipelined else b"")
    served = (stream, len(head), app, max_requests)
    assert _served(*served, lean=True) == _served(*served, lean=False)
