"""Provider keys out of everything relayed or recorded, after decoding what the upstream sent.

An upstream that refuses a key often quotes it, and one that is hostile or
broken may echo it anywhere: in an error, in a 200 answer, in an SSE event.
A byte search for the key misses it as soon as the upstream escapes it in JSON
(``"\\u0073\\u006b-..."`` is the same string), so JSON is decoded first and
every string in it (keys included) is searched; the document is re-encoded only
when something was redacted, so a clean answer goes through byte for byte.
Chunked transfer coding is undone by the HTTP client before this sees a body,
and SSE events are redacted whole (SseBuffer has joined their chunks), on the
data the one parser decoded, so no event is decoded twice. A key cut between
two events (a text delta ending ``sk-pro``, the next ``vider-...``) is whole
again in the client's hands: ``StreamRedactor`` holds back an event whose
appended text could begin a key until the next one says.
"""

from __future__ import annotations

import re

from routing.protocols.base import Event

REDACTED = "[redacted]"


class Redactor:
    """Replaces each of ``secrets`` (empty ones ignored) by ``[redacted]``."""

    def __init__(self, secrets=()):
        self.secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))
        self._raw = tuple(s.encode() for s in self.secrets)

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def value(self, value):
        """A decoded JSON value with every string (and key) redacted; the same object if clean."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            items = [self.value(item) for item in value]
            return value if all(a is b for a, b in zip(items, value)) else items
        if isinstance(value, dict):
            items = {self.text(k): self.value(v) for k, v in value.items()}
            clean = list(items) == list(value) and all(items[k] is value[k] for k in value)
            return value if clean else items
        return value

    def might_hide(self, raw: bytes) -> bool:
        """Could ``raw`` hold a secret? JSON can spell one only as itself or with a backslash."""
        if not self.secrets:
            return False
        return b"\\" in raw or any(secret in raw for secret in self._raw)

    def raw_bytes(self, raw: bytes) -> bytes:
        for secret in self._raw:
            raw = raw.replace(secret, REDACTED.encode())
        return raw

    def event(self, event: Event, raw: bytes) -> Event:
        """A parsed SSE event with the secrets out of its data, or of its bytes if it has none."""
        if event.data is None:
            return Event(None, self.raw_bytes(raw), event.named)
        redacted = self.value(event.data)
        if redacted is not event.data or any(secret in raw for secret in self._raw):
            return Event.of(redacted, event.named)
        return event


# Keys whose strings a client appends across events: the text, arguments and thinking
# deltas of the three protocols (chat ``delta.content``, Messages ``delta.text``,
# Responses ``delta``). A key cut between two of them is whole again on the client's side.
_APPENDED = frozenset(
    {
        "content",
        "text",
        "delta",
        "partial_json",
        "thinking",
        "arguments",
        "refusal",
        "reasoning",
        "reasoning_content",
    }
)
# What tells one appended text from another beside the string's path: a Messages block's
# index, a Responses item and part.
_PLACE = ("type", "index", "output_index", "content_index", "item_id")


class StreamRedactor:
    """Redaction across the events of one stream: a key cut between two deltas is caught.

    Each event is redacted whole first (``Redactor.event``). An event whose appended
    text ends in what could begin a key (``sk-pro``) is held back until the next event
    of the same text says whether the key goes on; a key found across held events is
    replaced in the first and cut from the others. A clean stream is delayed by at
    most the events that end in a key's beginning, and goes out byte for byte.
    """

    def __init__(self, redactor: Redactor):
        self.redactor = redactor
        self._longest = max((len(s) for s in redactor.secrets), default=0)
        self._pattern = re.compile("|".join(re.escape(s) for s in redactor.secrets))
        self._held = []  # [event, path, text] of one appended text, in order
        self._place = None

    def feed(self, event: Event, raw: bytes) -> list[Event]:
        """The events that may go to the client now, in order."""
        if not self.redactor:
            return [event]
        if self.redactor.might_hide(raw):
            event = self.redactor.event(event, raw)
        data = event.data
        if (data is None and not event.done) or (data is not None and data.get("type") == "ping"):
            return [event]  # a comment or a keep-alive: it neither continues nor ends a text
        found = _appended(data) if data is not None else None
        if found is None:
            return self.close() + [event]
        place, path, text = found
        out = self.close() if place != self._place else []
        self._place = place
        self._held.append([event, path, text])
        return out + self._settle()

    def close(self) -> list[Event]:
        """Everything held, as it stands (the stream ended, or another text began)."""
        out = [held[0] for held in self._held]
        self._held = []
        self._place = None
        return out

    def _settle(self) -> list[Event]:
        joined = "".join(held[2] for held in self._held)
        spans = [m.span() for m in self._pattern.finditer(joined)]
        start = 0
        for held in self._held:
            end = start + len(held[2])
            cut = _cut(joined, start, end, spans)
            if cut != held[2]:
                event, path, _ = held
                held[0] = Event.of(_with(event.data, path, cut), event.named)
                held[2] = cut
            held.append(end)
            start = end
        open_from = self._open_end(joined, spans[-1][1] if spans else 0)
        out = [held[0] for held in self._held if held[3] <= open_from]
        self._held = [held[:3] for held in self._held if held[3] > open_from]
        if not self._held:
            self._place = None
        return out

    def _open_end(self, text: str, start: int) -> int:
        """Where the longest end of ``text`` that could begin a key starts; len(text) if none."""
        for i in range(max(start, len(text) - self._longest + 1), len(text)):
            rest = text[i:]
            if any(secret.startswith(rest) for secret in self.redactor.secrets):
                return i
        return len(text)


def _appended(data: dict):
    """(place, path, text) of the one appended string in an event; None unless exactly one."""
    found = []

    def walk(value, path):
        if len(found) > 1:
            return
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(item, str):
                if key in _APPENDED:
                    found.append((path + (key,), item))
            elif isinstance(item, (dict, list)):
                walk(item, path + (key,))

    walk(data, ())
    if len(found) != 1:
        return None
    path, text = found[0]
    return (tuple(data.get(name) for name in _PLACE), path), path, text


def _cut(joined: str, start: int, end: int, spans) -> str:
    """joined[start:end] with each key that begins there redacted and the rest of one cut."""
    parts = []
    pos = start
    for begin, finish in spans:
        if finish <= pos or begin >= end:
            continue
        if begin >= start:
            parts += [joined[pos:begin], REDACTED]
        pos = min(finish, end)
    parts.append(joined[pos:end])
    return "".join(parts)


def _with(data, path, value):
    """A copy of ``data`` with the string at ``path`` replaced (the rest shared)."""
    if not path:
        return value
    copy = dict(data) if isinstance(data, dict) else list(data)
    copy[path[0]] = _with(data[path[0]], path[1:], value)
    return copy
