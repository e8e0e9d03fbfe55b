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

Above every attempt, the whole request has a deadline
(``routing.request_deadline_seconds``, set by the dispatcher with
``request_deadline``): an attempt's deadline is cut to what is left of it, so
auto trying every candidate twice cannot hold a client for 12 minutes.

A plain answer is also bounded in size (the provider's ``max_answer_bytes``,
decoded): past it the read stops with ProviderError("malformed").

Any provider reads its answers through here, whatever protocol it speaks.
"""

from __future__ import annotations

import contextvars
import time
import zlib
from contextlib import contextmanager

from routing.errors import ProviderError
from routing.providers.sse import SseBuffer

# When the request being served must have its answer (monotonic), if it has a deadline.
_request_due: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "request_due", default=None
)


@contextmanager
def request_deadline(seconds: float):
    """Within the block, no attempt outlives ``seconds`` from now."""
    token = _request_due.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _request_due.reset(token)


def request_seconds_left() -> float | None:
    """Seconds left of the request's deadline (None: it has none)."""
    due = _request_due.get()
    return None if due is None else due - time.monotonic()


def attempt_seconds(seconds: float) -> float:
    """An attempt's deadline, cut to what the request has left (at least a millisecond)."""
    left = request_seconds_left()
    return seconds if left is None else max(round(min(seconds, left), 3), 0.001)


def read_some(response, due: float, provider_name: str, waiting_for: str) -> bytes:
    """The next bytes of an answer, or ProviderError("timeout") once ``due`` (monotonic) passes."""
    left = due - time.monotonic()
    if left <= 0:
        raise ProviderError("timeout", f"provider {provider_name!r} {waiting_for}")
    response.raw.settimeout(max(left, 0.001))
    try:
        # Decoded, when the provider takes compressed answers (routing/providers/http.py).
        return response.raw.read1()
    except TimeoutError:
        raise ProviderError("timeout", f"provider {provider_name!r} {waiting_for}") from None
    except zlib.error:
        raise ProviderError(
            "malformed", f"provider {provider_name!r} answered with a body that does not decode"
        ) from None
    except (OSError, ValueError):
        # Reset, or the connection closed mid-answer, or a broken chunk
        # (routing.providers.connections.BrokenAnswer).
        raise ProviderError(
            "connect", f"provider {provider_name!r} stream broke mid-answer"
        ) from None


def read_body(
    response, started: float, seconds: float, provider_name: str, max_bytes: int
) -> bytes:
    """A whole plain answer, due ``seconds`` after ``started`` (monotonic), of at most
    ``max_bytes`` decoded."""
    due = started + seconds
    waiting_for = f"did not answer in full within {seconds:g}s"
    chunks = []
    size = 0
    while chunk := read_some(response, due, provider_name, waiting_for):
        size += len(chunk)
        if size > max_bytes:
            raise ProviderError(
                "malformed",
                f"provider {provider_name!r} answered with more than {max_bytes} bytes "
                "(the provider's max_answer_bytes)",
            )
        chunks.append(chunk)
    return b"".join(chunks)


def read_events(
    response, started: float, first_seconds: float, idle_seconds: float, name: str, max_bytes: int
):
    """Yield the SSE events of a stream: the first due ``first_seconds`` after ``started``,
    each next within ``idle_seconds`` of the one before, none over ``max_bytes``."""
    buffer = SseBuffer(max_bytes, name)
    due = started + first_seconds
    waiting_for = f"sent no event within {first_seconds:g}s"
    while chunk := read_some(response, due, name, waiting_for):
        for event in buffer.feed(chunk):
            yield event
            due = time.monotonic() + idle_seconds
            waiting_for = f"sent no event for {idle_seconds:g}s mid-stream"
    yield from buffer.rest()
