"""What the WSGI server leaves to the application: chunked request bodies, HEAD answers, and
the errors gunicorn answers itself.

Django reads a request body by ``CONTENT_LENGTH`` alone. A body sent with
``Transfer-Encoding: chunked`` (curl with a chunked header, ``requests`` with
a generator, some SDK proxies) has none, so under gunicorn, which de-chunks
it and says so with ``wsgi.input_terminated``, Django read it as empty: a 400
"not valid JSON" for a perfectly good request. ``read_terminated_body``
reads such a body to its end (at most the router's body limit plus one byte,
so the view's 413 still names the limit) and gives Django its length.
Behind the shipped nginx config the body arrives with a length already
(``proxy_request_buffering on`` buffers it); this covers gunicorn served
directly, as ``scripts/serve`` does.

A HEAD request (Claude Code sends ``HEAD /`` at start) is answered as GET
by Django, body included; gunicorn drops the body and logs "WSGI app sent
body bytes on a no-body response" for each. ``without_head_body`` sends the
headers alone.

A request gunicorn refuses before any application sees it (a request line
over ``limit_request_line``: 414; a header over ``limit_request_field_size``
or too many: 431; a request line that is no HTTP: 400) is answered by
gunicorn's ``util.write_error``, in HTML, and gunicorn has no setting for
it. ``json_server_errors`` (called from gunicorn.conf.py, in the master,
before the workers fork) puts a JSON writer in its place: the same status,
the OpenAI error shape with Anthropic's ``"type": "error"`` beside it (the
protocol is not known before the request line is read), so no API path
answers HTML. Raising gunicorn's limits and checking tighter ones here
instead would let a client make a worker read an unbounded header first.
"""

import io
import json


def read_terminated_body(environ: dict, limit: int) -> None:
    """Give a de-chunked body (no CONTENT_LENGTH, wsgi.input_terminated) its length."""
    if environ.get("CONTENT_LENGTH") or not environ.get("wsgi.input_terminated"):
        return
    if "chunked" not in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
        return
    data = environ["wsgi.input"].read(limit + 1)
    environ["wsgi.input"] = io.BytesIO(data)
    environ["CONTENT_LENGTH"] = str(len(data))


def without_head_body(environ: dict, body):
    """The answer's body, or nothing for a HEAD request (closing the one Django made)."""
    if environ.get("REQUEST_METHOD") != "HEAD":
        return body
    close = getattr(body, "close", None)
    if close is not None:
        close()
    return []


class WsgiEdges:
    """Wraps the Django application with the two fixes above."""

    def __init__(self, app, body_limit: int):
        self.app = app
        self.body_limit = body_limit

    def __call__(self, environ, start_response):
        read_terminated_body(environ, self.body_limit)
        return without_head_body(environ, self.app(environ, start_response))


def json_error_bytes(status: int, reason: str, message: str, code: str | None = None) -> bytes:
    """A whole HTTP/1.1 answer (the connection closed after it) carrying the error as JSON."""
    body = json.dumps(
        {
            "type": "error",
            "error": {
                "message": message or reason,
                "type": "invalid_request_error",
                "param": None,
                "code": code or reason.lower().replace(" ", "_").replace("-", "_"),
            },
        }
    ).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


def json_server_errors() -> None:
    """Make gunicorn answer the requests it refuses itself in JSON (see the module's doc)."""
    from gunicorn import util

    def write_error(sock, status_int, reason, mesg):
        util.write_nonblock(sock, json_error_bytes(status_int, reason, mesg))

    util.write_error = write_error
