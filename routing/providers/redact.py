"""Provider keys out of everything relayed or recorded, after decoding what the upstream sent.

An upstream that refuses a key often quotes it, and one that is hostile or
broken may echo it anywhere: in an error, in a 200 answer, in an SSE event.
A byte search for the key misses it as soon as the upstream escapes it in JSON
(``"\\u0073\\u006b-..."`` is the same string), so JSON is decoded first and
every string in it (keys included) is searched; the document is re-encoded only
when something was redacted, so a clean answer goes through byte for byte.
Chunked transfer coding is undone by the HTTP client before this sees a body,
and SSE events are redacted whole (SseBuffer has joined their chunks), on the
data the one parser decoded, so no event is decoded twice.
"""

from __future__ import annotations

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
