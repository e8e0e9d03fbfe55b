"""What every client protocol package fills in, and the pieces they share.

A client protocol (chat completions, the Messages API, the Responses API) is
a ``ClientProtocol``: it parses a body into the request the pipeline plans on
(routing.protocols.canonical), gives the dispatcher a ``Wire`` for it (how
the upstream is called, how the answer and its stream read, the error
shape), and renders a refusal in its error shape. The endpoint view
(routing.views) and the completion service (routing.completion) are the
same for all three. A wire holds nothing of a request and the plan it is
handed is frozen: what a wire reads of an answer it hands the relay at once
(``Answer``), so nothing calls back into the protocol's package.

Also here: the one reader of the request body's JSON; ``Event``, what a
stream carries from the provider to the client (its JSON decoded once, by the
one SSE parser, where the provider reads it; serialised once, at the edge,
and only when something changed it: an untouched event goes out as the bytes
that came in); the SSE writers; and ``TranslationError``, which a protocol's
inbound raises for a body it cannot express.
"""

from collections.abc import Callable
from dataclasses import dataclass

from routing import jsonio
from routing.errors import Failure, ProviderError, RouterError

DONE_EVENT = b"data: [DONE]"
_SSE_FIELDS = (b"", b"event", b"id", b"retry")


class TranslationError(ValueError):
    """A body that cannot be expressed in the protocol it is translated to (or read at all)."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param


def json_body(raw: bytes):
    """Raw request bytes parsed as JSON, or RouterError(400); the one JSON reader of the API."""
    try:
        return jsonio.loads_request(raw)
    except ValueError as error:
        raise RouterError(400, f"The body is not valid JSON: {error}", "invalid_json") from None


def param_path(location) -> str:
    """('messages', 3, 'role') -> 'messages[3].role': the one style every protocol's errors use."""
    text = ""
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def event_data(event: bytes) -> bytes | None:
    """The ``data`` of one SSE event (bytes without the blank line); None for a comment.

    A line that is no SSE field raises ProviderError("malformed"): the
    upstream is not speaking the protocol.
    """
    if event.startswith(b"data:") and b"\n" not in event:
        return event[5:].strip()
    parts = []
    for line in event.split(b"\n"):
        name = line.split(b":", 1)[0]
        if name == b"data":
            parts.append(line[5:].removeprefix(b" "))
        elif name not in _SSE_FIELDS:
            raise ProviderError("malformed", "the upstream sent a stream that is not SSE")
    if not parts:
        return None
    return b"\n".join(parts).strip()


def parse_event(event: bytes) -> dict | None:
    """The JSON object of one SSE event; None for ``[DONE]`` or a comment.

    The one SSE parser: chat chunks, Messages and Responses events alike.
    Data that is not a JSON object raises ProviderError("malformed").
    """
    data = event_data(event)
    if data is None or data == b"[DONE]":
        return None
    try:
        parsed = jsonio.loads(data)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise ProviderError("malformed", "the upstream sent an SSE event that is not JSON")
    return parsed


class Event:
    """One SSE event on its way to the client: its JSON (``data``) and, until changed, its bytes.

    ``data`` is None for ``[DONE]`` and for an event with no data (a comment);
    ``named``: it goes out as ``event: <type>`` then its data (Messages,
    Responses) rather than data alone (chat completions).
    """

    __slots__ = ("data", "named", "_raw")

    def __init__(self, data: dict | None, raw: bytes | None = None, named: bool = False):
        self.data = data
        self.named = named
        self._raw = raw

    @classmethod
    def parse(cls, raw: bytes) -> "Event":
        """An upstream's SSE event, decoded: the one place a streamed event is parsed."""
        return cls(parse_event(raw), raw, raw.startswith(b"event:"))

    @classmethod
    def of(cls, data: dict, named: bool = False) -> "Event":
        """An event the router made (a translation): serialised when it is sent."""
        return cls(data, None, named)

    @property
    def done(self) -> bool:
        return self._raw == DONE_EVENT

    def changed(self) -> None:
        """``data`` was edited: the bytes are made again when the event is sent."""
        self._raw = None

    def sse(self) -> bytes:
        """The event's bytes, without the blank line that ends it."""
        if self._raw is None:
            self._raw = named_sse(self.data) if self.named else data_sse(self.data)
        return self._raw


DONE = Event(None, DONE_EVENT)


def data_sse(value: dict) -> bytes:
    """A ``data:``-only SSE event (chat completions), without the blank line that ends it."""
    return b"data: " + jsonio.dumps(value)


def named_sse(event: dict) -> bytes:
    """A typed SSE event (Messages, Responses): ``event: <type>`` then its data."""
    return b"event: " + event["type"].encode() + b"\ndata: " + jsonio.dumps(event)


@dataclass
class StreamReply:
    """An open upstream stream; ``events`` yields its ``Event``s, each parsed once.

    ``translator``: the object turning a chat stream into the client's events,
    when the wire translates (its watcher ends a broken stream in its terms).
    """

    response: object  # the HTTP response, closed with the reply
    events: object
    translator: object = None

    def close(self):
        self.response.close()


@dataclass(frozen=True, slots=True)
class Answer:
    """A plain answer as the client gets it, read once by the wire that made it.

    What the relay needs (the bytes, the usage in chat-completions terms, the
    answer's size for an estimate, whether it asks for tool calls) is read
    here, so the relay reads fields instead of calling back into the wire.
    """

    content: bytes
    usage: dict | None
    answer_chars: int
    tool_calls: bool
    # What to keep with the decision (a stored response: routing.recording.stored), or None.
    stored_response: dict | None = None


class Wire:
    """What the dispatcher needs of a client protocol to call a provider and relay its answer.

    One object per protocol, holding nothing of a request: what a call needs
    comes as arguments (the frozen plan, the provider, the model, its
    ``CallContext``), the client's own request in ``plan.request.source``.
    """

    content_type = "application/json"

    def answer(self, plan, provider, model, context) -> Answer:
        raise NotImplementedError

    def open_stream(self, plan, provider, model, context) -> StreamReply:
        raise NotImplementedError

    def watcher(self, plan, outcome, reply: StreamReply):
        """A reader of the relayed events: ``see(event)`` each, ``error_event(status, message)``
        for a stream that broke after it started (see ChatWatcher)."""
        raise NotImplementedError

    def failure_response(self, failure: Failure):
        raise NotImplementedError


@dataclass(frozen=True)
class ClientProtocol:
    """One client protocol, as the completion service (routing.completion) is given it.

    ``parse(raw, meta, api_key_id)``: the body's bytes (and the request's META,
    for headers that go on with it) as the planned request
    (routing.protocols.canonical), or RouterError; ``wire``: how the
    dispatcher reaches a provider for it; ``render_error``: a RouterError in
    its shape; ``refusal(plan)``: a RouterError for a request the chosen model
    cannot be sent, raised before any row, or None (only the Responses API
    refuses so; the others fail at the attempt, on the row).
    """

    parse: Callable
    wire: Wire
    render_error: Callable
    refusal: Callable | None = None
