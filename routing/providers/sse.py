"""Server-sent events: cutting a byte stream into events, whatever the chunking."""


def split_sse_events(chunks):
    """Yield complete SSE events (bytes) from an iterator of arbitrary byte chunks."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        if b"\r\n" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
        while True:
            end = buffer.find(b"\n\n")
            if end < 0:
                break
            event, buffer = buffer[:end], buffer[end + 2 :]
            if event:
                yield event
    if buffer.strip():
        yield buffer.strip(b"\n")
