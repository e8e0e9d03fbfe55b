"""Server-sent events: cutting a byte stream into events, whatever the chunking.

Incremental, so the reader (routing/providers/deadlines.py) can restart its
idle clock at each complete event. Linear in the stream: each byte is looked
at about once (one event of 50 MB arriving in 64 KB reads once took 27 s of
CPU, the buffer copied and searched whole at every read), and an event may
not grow past ``max_bytes`` (ProviderError "malformed"). Bytes that are not
UTF-8 come out replaced (U+FFFD): an event relayed as it came (the native
Messages and Responses streams) never hands a client invalid text.
"""

from routing.errors import ProviderError


class SseBuffer:
    """Feed it byte chunks as they arrive; it hands back each complete event (bytes)."""

    def __init__(self, max_bytes: int | None = None, provider_name: str = "upstream"):
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no event end
        self._max_bytes = max_bytes
        self._name = provider_name

    def feed(self, chunk: bytes) -> list[bytes]:
        buffer = self._buffer
        # A "\r\n" split across two chunks: look one byte back.
        start = max(self._scanned - 1, 0)
        buffer += chunk
        if b"\r" in chunk or (start < len(buffer) and buffer[start : start + 1] == b"\r"):
            tail = bytes(buffer[start:]).replace(b"\r\n", b"\n")
            del buffer[start:]
            buffer += tail
        events = []
        begin = 0
        # An end may begin two bytes back ("\n" + "\r" before a "\n" that just came).
        search = max(self._scanned - 2, 0)
        while True:
            end = buffer.find(b"\n\n", search)
            if end < 0:
                break
            if end > begin:
                events.append(_utf8(bytes(buffer[begin:end])))
            begin = search = end + 2
        if begin:
            del buffer[:begin]
        self._scanned = len(buffer)
        if self._max_bytes is not None and len(buffer) > self._max_bytes:
            raise ProviderError(
                "malformed",
                f"provider {self._name!r} sent a stream event of more than {self._max_bytes} bytes",
            )
        return events

    def rest(self) -> list[bytes]:
        """What is left when the stream ends: a last event without its blank line."""
        tail = bytes(self._buffer).strip(b"\n")
        self._buffer = bytearray()
        self._scanned = 0
        return [_utf8(tail)] if tail.strip() else []


def _utf8(event: bytes) -> bytes:
    try:
        event.decode()
    except UnicodeDecodeError:
        return event.decode(errors="replace").encode()
    return event
