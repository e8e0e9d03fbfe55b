"""A lean HTTP/1.1 exchange for the plain requests the buffered worker already holds whole.

The worker's poller has read the request (router_project/buffered_worker.py):
it found the head's end and the body's length. gunicorn's thread then parses
the head again (its Parser and Request), builds the environ (``wsgi.create``),
writes the answer through its ``Response`` and logs the access line from
atoms of the whole environ, reading its ``Config`` (a lookup through its
settings each time) about thirty times: about a third of the thread's work
around a trivial application (bench/bench_lean_http.py).

For a request in the plain forms agents and nginx send, ``plain_request``
parses the head strictly; ``plain_environ`` is the environ ``wsgi.create``
makes of it, ``PlainAnswer`` puts gunicorn's bytes on the wire (its head in
the send of its body when it has a length, as ``OneSendResponse``);
router_project/lean_exchange.py serves the request with them. Whatever the strict parser does
not take plainly (odd characters, folding, a framing or expectation header,
an absolute target, an underscore in a name, a head at gunicorn's limits...)
is None: the request goes gunicorn's way, with its refusals as before. The
settings that change gunicorn's reading of a request (TLS, the PROXY
protocol, h2c, ``strip_header_spaces``, a ``SCRIPT_NAME``) keep every
request on gunicorn's way.
"""

from __future__ import annotations

import io
import os
import re
import time

from gunicorn import SERVER, util
from gunicorn.http import wsgi
from gunicorn.http.errors import InvalidResponseHeader, InvalidResponseHeaderName
from gunicorn.http.message import (
    DEFAULT_MAX_HEADERFIELD_SIZE,
    MAX_HEADERS,
    MAX_REQUEST_LINE,
    TOKEN_RE,
    _ip_in_allow_list,
)

METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
# origin-form, printable ASCII, no fragment, not "//" (which gunicorn reads apart).
_TARGET = re.compile(r"/(?!/)[\x21\x22\x24-\x7e]*")
# A token without "_" (which gunicorn refuses or maps by its header_map).
_NAME = re.compile(r"[-!#$%&'*+.^`|~0-9a-zA-Z]+")
_VALUE = re.compile(r"[\t\x20-\x7e]*")
_DIGITS = re.compile(r"[0-9]+")
# Headers that ask gunicorn for more than a plain read (100 Continue, another protocol,
# another framing): gunicorn's way.
_NOT_PLAIN = frozenset(("TRANSFER-ENCODING", "EXPECT", "UPGRADE", "HTTP2-SETTINGS"))
_SINGLE = frozenset(("HOST", "CONTENT-TYPE", "CONTENT-LENGTH"))


class PlainSettings:
    """What the lean exchange reads of gunicorn's settings, read once."""

    def __init__(self, cfg):
        self.usable = (
            not cfg.is_ssl
            and cfg.proxy_protocol == "off"
            and cfg.http2_cleartext == "off"
            and not cfg.strip_header_spaces
            and getattr(cfg, "protocol", "http") == "http"
        )
        # The limits as gunicorn's Request reads them.
        line = cfg.limit_request_line
        self.limit_line = MAX_REQUEST_LINE if line < 0 or line >= MAX_REQUEST_LINE else line
        fields = cfg.limit_request_fields
        self.limit_fields = MAX_HEADERS if fields <= 0 or fields > MAX_HEADERS else fields
        size = cfg.limit_request_field_size
        self.limit_field_size = size if size > 0 else DEFAULT_MAX_HEADERFIELD_SIZE
        self.secure_scheme_headers = cfg.secure_scheme_headers
        self.forwarded_allow_ips = cfg.forwarded_allow_ips
        self.forwarded_allow_networks = cfg.forwarded_allow_networks()
        self.keepalive = cfg.keepalive
        self.pre_request = cfg.pre_request
        self.post_request = cfg.post_request
        self.access_log_format = cfg.access_log_format
        self.cfg = cfg

    def trusts(self, client) -> bool:
        """Whether ``client`` may set the scheme headers (gunicorn's forwarded_allow_ips)."""
        return _ip_in_allow_list(client[0], self.forwarded_allow_ips, self.forwarded_allow_networks)


class PlainRequest:
    """A request the lean parser took, in the attributes gunicorn's code reads of its own
    (hooks, the access log, ``handle_error``)."""

    def __init__(self, method, uri, path, query, version, headers, body, scheme):
        self.method = method
        self.uri = uri
        self.path = path
        self.query = query
        self.fragment = ""
        self.version = version
        self.headers = headers
        self.body = body
        self.scheme = scheme

    def should_close(self) -> bool:
        """gunicorn's rule: the first Connection header, else the version."""
        for name, value in self.headers:
            if name == "CONNECTION":
                value = value.lower().strip(" \t")
                if value == "close":
                    return True
                if value == "keep-alive":
                    return False
                break
        return self.version <= (1, 0)


def plain_request(settings: PlainSettings, head: bytes, body, client) -> PlainRequest | None:
    """The request of ``head`` (its blank line included) and ``body`` (what its
    Content-Length framed), or None when gunicorn should read it."""
    if not settings.usable or not isinstance(client, tuple) or "SCRIPT_NAME" in os.environ:
        return None
    lines = head[:-4].decode("latin-1").split("\r\n")
    request_line = lines[0]
    if len(request_line) > settings.limit_line > 0 or len(lines) - 1 > settings.limit_fields:
        return None
    parts = request_line.split(" ")
    if len(parts) != 3 or parts[0] not in METHODS or not _TARGET.fullmatch(parts[1]):
        return None
    method, uri, protocol = parts
    if protocol == "HTTP/1.1":
        version = (1, 1)
    elif protocol == "HTTP/1.0":
        version = (1, 0)
    else:
        return None
    headers = []
    seen = set()
    scheme, scheme_set, length = "http", False, None
    secure_headers = settings.secure_scheme_headers
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not _NAME.fullmatch(name) or not _VALUE.fullmatch(value):
            return None
        if len(line) + 2 > settings.limit_field_size:
            return None
        name = name.upper()
        value = value.strip(" \t")
        if name in _NOT_PLAIN:
            return None
        if name in _SINGLE:
            if name in seen:
                return None
            seen.add(name)
            if name == "CONTENT-LENGTH":
                if not _DIGITS.fullmatch(value):
                    return None
                length = int(value)
        if name in secure_headers and settings.trusts(client):
            secure = "https" if value == secure_headers[name] else "http"
            if scheme_set and secure != scheme:
                return None  # gunicorn's InvalidSchemeHeaders
            scheme, scheme_set = secure, True
        headers.append((name, value))
    if (length or 0) != len(body):
        return None
    path, _, query = uri.partition("?")
    return PlainRequest(method, uri, path, query, version, headers, io.BytesIO(bytes(body)), scheme)


def plain_environ(settings: PlainSettings, request: PlainRequest, answer, sock, client, server):
    """The environ gunicorn's ``wsgi.create`` (and gthread's ``handle_request``) makes."""
    environ = wsgi.base_environ(settings.cfg)
    environ["wsgi.multithread"] = True
    environ["wsgi.input"] = request.body
    environ["gunicorn.socket"] = sock
    environ["REQUEST_METHOD"] = request.method
    environ["QUERY_STRING"] = request.query
    environ["RAW_URI"] = request.uri
    environ["SERVER_PROTOCOL"] = "HTTP/{}.{}".format(*request.version)
    repeated = {}
    for name, value in request.headers:
        if name == "CONTENT-TYPE":
            environ["CONTENT_TYPE"] = value
            continue
        if name == "CONTENT-LENGTH":
            environ["CONTENT_LENGTH"] = value
            continue
        key = "HTTP_" + name.replace("-", "_")
        if key in environ:
            repeated.setdefault(key, [environ[key]]).append(value)
        else:
            environ[key] = value
    for key, values in repeated.items():
        environ[key] = ",".join(values)
    environ["wsgi.url_scheme"] = request.scheme
    environ["REMOTE_ADDR"] = client[0]
    environ["REMOTE_PORT"] = str(client[1])
    environ["SERVER_NAME"] = server[0]
    environ["SERVER_PORT"] = str(server[1])
    environ["PATH_INFO"] = util.unquote_to_wsgi_str(request.path)
    environ["SCRIPT_NAME"] = ""
    environ["wsgi.early_hints"] = wsgi._make_early_hints_callback(request, sock, answer)
    return environ


class _Date:
    """gunicorn's Date header value, made once a second (``util.http_date`` has a second's
    precision)."""

    second = None
    value = ""

    @classmethod
    def now(cls) -> str:
        now = time.time()
        second = int(now)
        if second != cls.second:
            cls.value, cls.second = util.http_date(now), second
        return cls.value


class PlainAnswer:
    """The bytes gunicorn's ``Response`` (as ``OneSendResponse``) sends, in its attributes'
    names (gunicorn's access log and hooks read them).

    An answer with a length leaves with its head in one send; a chunked one
    (an SSE stream) goes chunk by chunk as the application yields. A
    ``wsgi.file_wrapper`` answer is written as the application iterates it,
    not by ``sendfile``: the same bytes for a file of known length (as every
    file the router serves); without one, the chunks are the wrapper's blocks.
    """

    def __init__(self, request: PlainRequest, sock):
        self.req = request
        self.sock = sock
        self.status = None
        self.status_code = None
        self.headers = []
        self.headers_sent = False
        self.response_length = None
        self.sent = 0
        self.chunked = False
        self.must_close = False
        self.upgrade = False
        self.omits_body = False
        self.omits_body_warned = False

    def force_close(self):
        self.must_close = True

    def should_close(self) -> bool:
        if self.must_close or self.req.should_close():
            return True
        if self.response_length is not None or self.chunked:
            return False
        if self.req.method == "HEAD":
            return False
        return not (self.status_code < 200 or self.status_code in (204, 304))

    def start_response(self, status, headers, exc_info=None):
        if exc_info:
            try:
                if self.status and self.headers_sent:
                    util.reraise(exc_info[0], exc_info[1], exc_info[2])
            finally:
                exc_info = None
        elif self.status is not None:
            raise AssertionError("Response headers already set!")
        if not isinstance(status, str):
            raise TypeError(f"{status!r} is not a string")
        if not wsgi.STATUS_RE.fullmatch(status):
            raise ValueError(f"Invalid status {status!r}")
        self.status = status
        code = self.status_code = int(status[:3])
        self._take_headers(headers)
        self.omits_body = self.req.method == "HEAD" or code in (204, 304) or 100 <= code < 200
        if self.omits_body and (code == 204 or 100 <= code < 200):
            self.headers = [(k, v) for k, v in self.headers if k.lower() != "content-length"]
            self.response_length = None
        self.chunked = (
            self.response_length is None and self.req.version > (1, 0) and not self.omits_body
        )
        return self.write

    def _take_headers(self, headers):
        """gunicorn's ``process_headers``: checked, stripped, hop-by-hop ones dropped."""
        for name, value in headers:
            if not isinstance(name, str):
                raise TypeError(f"{name!r} is not a string")
            if not TOKEN_RE.fullmatch(name):
                raise InvalidResponseHeaderName(f"{name!r}")
            if not isinstance(value, str):
                raise TypeError(f"{value!r} is not a string")
            if not wsgi.HEADER_VALUE_RE.fullmatch(value):
                raise InvalidResponseHeader(f"{name!r}")
            value = value.strip(" \t")
            lname = name.lower()
            if lname == "content-length":
                self.response_length = int(value)
            elif lname in util.hop_headers:
                if lname == "connection":
                    if value.lower() == "upgrade":
                        self.upgrade = True
                elif lname == "upgrade" and value.lower() == "websocket":
                    self.headers.append((name, value))
                continue
            self.headers.append((name, value))

    def _head(self) -> bytes:
        if self.upgrade:
            connection = "upgrade"
        elif self.should_close():
            connection = "close"
        else:
            connection = "keep-alive"
        major, minor = self.req.version
        head = [
            f"HTTP/{major}.{minor} {self.status}\r\nServer: {SERVER}\r\n"
            f"Date: {_Date.now()}\r\nConnection: {connection}\r\n"
        ]
        if self.chunked:
            head.append("Transfer-Encoding: chunked\r\n")
        head.extend([f"{name}: {value}\r\n" for name, value in self.headers])
        head.append("\r\n")
        self.headers_sent = True
        return "".join(head).encode("latin-1")

    def write(self, data):
        head = None if self.headers_sent else self._head()
        if not isinstance(data, bytes):
            if head is not None:
                self.sock.sendall(head)
            raise TypeError(f"{data!r} is not a byte")
        if self.omits_body:
            if data and not self.omits_body_warned:
                wsgi.log.warning(
                    "WSGI app sent body bytes on a no-body response "
                    "(method=%s status=%s); dropping per RFC 9110.",
                    self.req.method,
                    self.status_code,
                )
                self.omits_body_warned = True
            data = b""
        elif self.response_length is not None:
            data = data[: max(self.response_length - self.sent, 0)]
        self.sent += len(data)
        if self.chunked:
            if head is not None:
                self.sock.sendall(head)
            if data:
                util.write_chunk(self.sock, data)
        elif head is not None:
            self.sock.sendall(head + data)
        elif data:
            self.sock.sendall(data)

    def close(self):
        if not self.headers_sent:
            self.sock.sendall(self._head())
        if self.chunked:
            self.sock.sendall(b"0\r\n\r\n")
