"""The one outbound HTTP seam every provider shares: pooled connections, deadlines, redaction.

Whatever protocol a provider speaks, a connection that fails, a timeout or a
stream that breaks mid-answer must reach the dispatcher as the same kinds of
``ProviderError`` (connect, timeout), so retries and fallback treat every
upstream alike. Every answer is read under the attempt's deadline
(routing/providers/deadlines.py) and comes out with the provider's key
redacted after decoding (routing/providers/redact.py). Tests patch nothing
here: they run real local servers.

The HTTP itself is routing/providers/connections.py (keep-alive connections
pooled per origin, TLS, the answer's framing); this module writes the request
head, sends it with the body the provider serialised once, and turns every
failure into a ``ProviderError``.
"""

import time

from routing import jsonio
from routing.errors import ProviderError
from routing.protocols.base import Event
from routing.providers.base import Provider
from routing.providers.connections import CannotConnect, ConnectTimeout, target
from routing.providers.deadlines import attempt_seconds, read_body, read_events
from routing.providers.framing import BrokenAnswer
from routing.providers.redact import StreamRedactor

# Sent with every request (urllib3 sent its own name and version).
USER_AGENT = b"User-Agent: llm-router\r\n"

# Content codings a provider with ``accept_compressed`` may answer in, as undone here.
DECODED = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}


class UpstreamResponse:
    """An answer as the providers and the deadline reader see it (requests' names).

    ``raw`` is the connection's answer (routing.providers.connections.Response),
    read with ``read1``. Closed, a connection read to its end goes back to the
    pool for the next request, and so does one whose rest has already arrived
    (a stream the relay stopped at [DONE]); one left mid-answer (a deadline, a
    client gone) is closed.
    """

    def __init__(self, response, started: float, deadline: float, provider, url: str):
        self.raw = response
        self.status_code = response.status
        self.headers = response.headers  # names lower-cased
        self.attempt_started = started
        self.attempt_deadline = deadline
        self._provider = provider
        self._url = url

    @property
    def shown_url(self) -> str:
        """The URL asked, without credentials: errors name it."""
        config = self._provider.config
        return config.shown_url + self._url.removeprefix(config.base_url or "")

    def read(self, size: int) -> bytes:
        """Up to ``size`` bytes of the body, decoded (an error answer, read capped)."""
        return self.raw.read(size)

    def close(self):
        self.raw.close()


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
        pool, path = target(url)
        head = _request_head(path, pool.host_header, headers, len(data))
        try:
            response = pool.request(
                head,
                data,
                min(self.config.connect_timeout_seconds, deadline),
                started + deadline,
                time.monotonic,
            )
        except ConnectTimeout:
            raise ProviderError(
                "connect", f"provider {self.name!r}: connection timed out"
            ) from None
        except CannotConnect:
            raise ProviderError(
                "connect", f"cannot connect to provider {self.name!r} at {self.config.shown_url}"
            ) from None
        except TimeoutError:
            raise ProviderError(
                "timeout", f"provider {self.name!r} sent nothing for {deadline:g}s"
            ) from None
        except BrokenAnswer:
            raise ProviderError(
                "connect",
                f"provider {self.name!r} closed the connection or answered with no valid HTTP",
            ) from None
        except OSError as error:  # TLS refused (ssl.SSLError), reset, ...
            raise ProviderError(
                "connect", f"provider {self.name!r}: {type(error).__name__}"
            ) from None
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            if stream or not self.config.accept_compressed:
                response.close()
                raise ProviderError(
                    "malformed",
                    f"provider {self.name!r} answered {encoding}-compressed though asked for "
                    "identity (set accept_compressed: true on the provider to take it)",
                )
            if encoding not in DECODED:
                response.close()
                raise ProviderError(
                    "malformed",
                    f"provider {self.name!r} answered {encoding}-compressed, "
                    "which the router does not decode (it asks for gzip or deflate)",
                )
            response.decode_as(DECODED[encoding])
        return UpstreamResponse(response, started, deadline, self, url)

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


def _request_head(target: bytes, host: bytes, headers: dict, length: int) -> bytes:
    """The request line and headers of a POST of ``length`` bytes, as sent."""
    lines = [b"POST ", target, b" HTTP/1.1\r\nHost: ", host, b"\r\n", USER_AGENT]
    for name, value in headers.items():
        line = f"{name}: {value}\r\n"
        if line.count("\n") != 1 or line.count("\r") != 1:
            # A value with a line break would smuggle a header (http.client refused it too).
            raise ValueError(f"invalid value for the header {name!r}")
        lines.append(line.encode("latin-1"))
    lines.append(b"Content-Length: %d\r\n\r\n" % length)
    return b"".join(lines)
