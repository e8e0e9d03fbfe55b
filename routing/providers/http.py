"""The one outbound HTTP seam every provider shares: a pooled client, deadlines, redaction.

Whatever protocol a provider speaks, a connection that fails, a timeout or a
stream that breaks mid-answer must reach the dispatcher as the same kinds of
``ProviderError`` (connect, timeout), so retries and fallback treat every
upstream alike. Every answer is read under the attempt's deadline
(routing/providers/deadlines.py) and comes out with the provider's key
redacted after decoding (routing/providers/redact.py). Tests patch nothing
here: they run real local servers.

The client is urllib3 (the transport under requests, already installed), one
pool per upstream origin and process: a proxy sends a body it has already serialised and reads
back bytes, and what ``requests`` does per call on top of its transport
(merging session settings, hooks, cookies, a PreparedRequest, the adapter
lookup) is work for nothing. Measured against bench/fast_upstream.py with a
2 KB body, one keep-alive connection, median of 2,000 calls:
``requests.Session.post`` 350 µs, a urllib3 pool 170 µs, bare
``http.client`` 95 µs. urllib3 keeps what http.client lacks: a thread-safe
pool of keep-alive connections per host, connect and read timeouts, TLS with
the CA bundle requests uses. Nothing here reads the environment (no proxy
variables, no netrc). Each URL's pool and request target are looked up in a
dict: urllib3's ``PoolManager`` parsed the URL and normalised a pool key on
every call, 20 us of the 125 us a call took (the same bench, interleaved).
"""

import threading
import time

import certifi
import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ReadTimeoutError,
)

from routing import jsonio
from routing.errors import ProviderError
from routing.protocols.base import Event
from routing.providers.base import Provider
from routing.providers.deadlines import attempt_seconds, read_body, read_events
from routing.providers.redact import StreamRedactor

# Per host: idle keep-alive connections kept (a worker's threads, gunicorn.conf.py's
# 128 by default, mostly wait on slow clients, not upstreams); more are opened when needed.
POOL_SIZE = 32

# URLs looked up: far more than a config's providers ask; past it the pools start afresh
# (a test session serves hundreds of upstreams, each on its own port).
MAX_URLS = 64

_lock = threading.Lock()
# URL asked -> (its origin's pool, the request target: path and query).
_targets: dict[str, tuple[urllib3.HTTPConnectionPool, str]] = {}
_pools: dict[tuple, urllib3.HTTPConnectionPool] = {}


def _target(url: str) -> tuple[urllib3.HTTPConnectionPool, str]:
    """The pool of ``url``'s origin and what is asked of it (credentials in a URL are not
    sent, as with urllib3's PoolManager)."""
    found = _targets.get(url)
    if found is not None:
        return found
    parsed = urllib3.util.parse_url(url)
    origin = (parsed.scheme or "http", parsed.host, parsed.port)
    with _lock:
        if len(_targets) >= MAX_URLS:
            for pool in _pools.values():
                pool.close()  # idle connections closed; one in use is closed when returned
            _targets.clear()
            _pools.clear()
        pool = _pools.get(origin)
        if pool is None:
            https = {"ca_certs": certifi.where()} if origin[0] == "https" else {}
            pool = _pools[origin] = urllib3.connection_from_url(
                url, maxsize=POOL_SIZE, block=False, retries=False, **https
            )
        found = _targets[url] = (pool, parsed.request_uri)
    return found


class UpstreamResponse:
    """An answer as the providers and the deadline reader see it (requests' names).

    ``raw`` is urllib3's response, read with ``read1``; ``text``/``content``
    read what is left of the body (an error answer). Closed, a connection read
    to its end goes back to the pool for the next request; one left mid-answer
    (a stream the relay stopped at [DONE], a deadline) is closed.
    """

    def __init__(self, response, started: float, deadline: float, shown_url: str = ""):
        self.raw = response
        self.shown_url = shown_url  # the URL asked, without credentials: errors name it
        self.status_code = response.status
        self.headers = response.headers  # case-insensitive, like requests'
        self.attempt_started = started
        self.attempt_deadline = deadline

    @property
    def content(self) -> bytes:
        return self.raw.data

    def iter_content(self, chunk_size: int):
        """The body in decoded chunks of up to ``chunk_size`` (an error answer, read capped)."""
        return self.raw.stream(chunk_size, decode_content=True)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def close(self):
        if not self.raw.isclosed():
            self.raw.close()
        self.raw.release_conn()


class HttpProvider(Provider):
    def _send(self, url: str, data: bytes, headers: dict, stream: bool, deadline: float):
        """POST; the answer's body is left unread, for ``_json_body`` or ``_read_events``.

        ``deadline``: seconds for the whole attempt (a stream: until its first
        event). The response carries when the attempt started and its deadline.
        """
        if stream:
            headers = {**headers, "Accept": "text/event-stream", "Accept-Encoding": "identity"}
        elif self.config.accept_compressed:
            headers = {**headers, "Accept-Encoding": "gzip, deflate"}
        else:
            headers = {**headers, "Accept-Encoding": "identity"}
        # Never past the whole request's deadline (routing.request_deadline_seconds).
        deadline = attempt_seconds(deadline)
        started = time.monotonic()
        pool, target = _target(url)
        try:
            response = pool.urlopen(
                "POST",
                target,
                body=data,
                headers=headers,
                timeout=urllib3.Timeout(
                    connect=min(self.config.connect_timeout_seconds, deadline), read=deadline
                ),
                preload_content=False,
                redirect=False,
                assert_same_host=False,
            )
        except NewConnectionError:  # first: urllib3 makes it a ConnectTimeoutError too
            raise ProviderError(
                "connect", f"cannot connect to provider {self.name!r} at {self.config.shown_url}"
            ) from None
        except ConnectTimeoutError:
            raise ProviderError(
                "connect", f"provider {self.name!r}: connection timed out"
            ) from None
        except ReadTimeoutError:
            raise ProviderError(
                "timeout", f"provider {self.name!r} sent nothing for {deadline:g}s"
            ) from None
        except (HTTPError, OSError) as error:
            raise ProviderError(
                "connect", f"provider {self.name!r}: {type(error).__name__}"
            ) from None
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity") and (stream or not self.config.accept_compressed):
            response.release_conn()
            response.close()
            raise ProviderError(
                "malformed",
                f"provider {self.name!r} answered {encoding}-compressed though asked for "
                "identity (set accept_compressed: true on the provider to take it)",
            )
        shown = self.config.shown_url + url.removeprefix(self.config.base_url or "")
        return UpstreamResponse(response, started, deadline, shown)

    def _json_body(self, response) -> dict:
        """The whole answer, within the attempt's deadline, as a JSON object, key redacted."""
        raw = read_body(
            response,
            response.attempt_started,
            response.attempt_deadline,
            self.name,
            self.config.max_answer_bytes,
        )
        try:
            data = jsonio.loads(raw)
        except ValueError:
            raise ProviderError(
                "malformed", f"provider {self.name!r} answered with a body that is not JSON"
            ) from None
        if not isinstance(data, dict):
            raise ProviderError("malformed", f"provider {self.name!r} answered with no object")
        redactor = self.redactor()
        return redactor.value(data) if redactor.might_hide(raw) else data

    def _read_events(self, response):
        """The SSE events of a stream, under its deadlines, each parsed once, the key redacted."""
        events = read_events(
            response,
            response.attempt_started,
            response.attempt_deadline,
            self.config.stream_idle_seconds,
            self.name,
            self.config.max_answer_bytes,
        )
        redactor = StreamRedactor(self.redactor())
        for raw in events:
            yield from redactor.feed(Event.parse(raw), raw)
        yield from redactor.close()
