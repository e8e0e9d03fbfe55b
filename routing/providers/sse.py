"""Server-sent events: cutting a byte stream into events, whatever the chunking.

Incremental, so the reader (routing/providers/deadlines.py) can restart its
idle clock at each complete event.
"""


class SseBuffer:
    """Feed it byte chunks as they arrive; it hands back each complete event (bytes)."""

    def __init__(self):
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        buffer = self._buffer + chunk
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
        events = []
        while True:
            end = buffer.find(b"\n\n")
            if end < 0:
                break
            event, buffer = buffer[:end], buffer[end + 2 :]
            if event:
                events.append(event)
        self._buffer = buffer
        return events

    def rest(self) -> list[bytes]:
        """What is left when the stream ends: a last event without its blank line."""
        tail = self._buffer.strip(b"\n")
        self._buffer = b""
        return [tail] if tail.strip() else []
