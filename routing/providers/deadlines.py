"""Deadlines for an upstream attempt, enforced on the socket rather than per read.

A read timeout alone is no deadline: an upstream that drips a byte a second
never trips one and holds a router thread for as long as it likes. So every
read of an answer gets, as its socket timeout, whatever is left of the
attempt's deadline:

- a plain answer: ``timeout_seconds`` counts from the start of the attempt
  and covers the first byte and the whole body (connecting is bounded by
  ``connect_timeout_seconds`` as well);
- a stream: the first event is due within ``timeout_seconds`` of the start,
  and each next one within ``stream_idle_seconds`` of the previous one, so a
  long generation that keeps talking is never cut, and a stalled one is.

Any provider reads its answers through here, whatever protocol it speaks.
"""

from __future__ import annotations

import time

from urllib3.exceptions import ProtocolError, ReadTimeoutError

from routing.errors import ProviderError
from routing.providers.sse import SseBuffer

# Read size: read1 returns whatever has arrived, up to this.
READ_BYTES = 65536


def _set_read_timeout(response, seconds: float) -> None:
    connection = getattr(response.raw, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        sock.settimeout(max(seconds, 0.001))


def read_some(response, due: float, provider_name: str, waiting_for: str) -> bytes:
    """The next bytes of an answer, or ProviderError("timeout") once ``due`` (monotonic) passes."""
    left = due - time.monotonic()
    if left <= 0:
        raise ProviderError("timeout", f"provider {provider_name!r} {waiting_for}")
    _set_read_timeout(response, left)
    try:
        # Decoded: an upstream may gzip a plain answer unasked (a stream asks for identity).
        return response.raw.read1(READ_BYTES, decode_content=True)
    except (ReadTimeoutError, TimeoutError):
        raise ProviderError("timeout", f"provider {provider_name!r} {waiting_for}") from None
    except (ProtocolError, OSError, ValueError):
        # Reset, or the connection closed mid-answer (urllib3 says IncompleteRead).
        raise ProviderError(
            "connect", f"provider {provider_name!r} stream broke mid-answer"
        ) from None


def read_body(response, started: float, seconds: float, provider_name: str) -> bytes:
    """A whole plain answer, due ``seconds`` after ``started`` (monotonic)."""
    due = started + seconds
    waiting_for = f"did not answer in full within {seconds:g}s"
    chunks = []
    while chunk := read_some(response, due, provider_name, waiting_for):
        chunks.append(chunk)
    return b"".join(chunks)


def read_events(response, started: float, first_seconds: float, idle_seconds: float, name: str):
    """Yield the SSE events of a stream: the first due ``first_seconds`` after ``started``,
    each next within ``idle_seconds`` of the one before."""
    buffer = SseBuffer()
    due = started + first_seconds
    waiting_for = f"sent no event within {first_seconds:g}s"
    while chunk := read_some(response, due, name, waiting_for):
        for event in buffer.feed(chunk):
            yield event
            due = time.monotonic() + idle_seconds
            waiting_for = f"sent no event for {idle_seconds:g}s mid-stream"
    yield from buffer.rest()
