"""A minimal OpenAI-compatible upstream that answers faster than the router can ask.

The proxy benchmark compares "straight to the upstream" with "through the
router"; the difference is the router's cost only while the upstream is never
the bottleneck. tests/support/openai_upstream.py is a ThreadingHTTPServer built for
scripted failures: a thread per connection and http.server's line-by-line
parsing put it in the same speed class as the router itself. This one is a
single asyncio protocol on raw HTTP/1.1 keep-alive that answers every POST
with one canned completion, or a short canned SSE stream when the body asks
for ``"stream": true``; it reads the body only to find its end.

Run: ``.venv/bin/python bench/fast_upstream.py PORT`` (127.0.0.1 only).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys

ANSWER = "Hello from the fast upstream."

COMPLETION = json.dumps(
    {
        "id": "chatcmpl-fast",
        "object": "chat.completion",
        "created": 0,
        "model": "fast",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": ANSWER},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }
).encode()


def _sse_chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-fast",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fast",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        chunk = {**chunk, "choices": [], "usage": usage}
    data = b"data: " + json.dumps(chunk).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


STREAM_BODY = b"".join(
    [
        _sse_chunk({"role": "assistant", "content": ""}),
        *(_sse_chunk({"content": word + " "}) for word in ANSWER.split(" ")),
        _sse_chunk({}, "stop"),
        _sse_chunk({}, usage={"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}),
        b"e\r\ndata: [DONE]\n\n\r\n",
        b"0\r\n\r\n",
    ]
)

JSON_RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
    b"Connection: keep-alive\r\n\r\n%s" % (len(COMPLETION), COMPLETION)
)
STREAM_RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
    b"Connection: keep-alive\r\n\r\n" + STREAM_BODY
)
MODELS = b'{"object": "list", "data": []}'
GET_RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
    % (len(MODELS), MODELS)
)

CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:\s*(\d+)", re.IGNORECASE)
# Both the router's body and the bench's request bodies are json.dumps output,
# so the flag is spelled with optional spaces around the colon.
WANTS_STREAM = re.compile(rb'"stream"\s*:\s*true')


class CannedHttp(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buffer = bytearray()
        self.need = -1  # bytes of head + body once the head is parsed

    def data_received(self, data):
        self.buffer += data
        while True:
            if self.need < 0:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = bytes(self.buffer[: end + 2])
                match = CONTENT_LENGTH.search(head)
                self.head_len = end + 4
                self.need = self.head_len + (int(match.group(1)) if match else 0)
                self.is_get = head.startswith(b"GET")
            if len(self.buffer) < self.need:
                return
            body = self.buffer[self.head_len : self.need]
            if self.is_get:
                self.transport.write(GET_RESPONSE)
            elif WANTS_STREAM.search(body):
                self.transport.write(STREAM_RESPONSE)
            else:
                self.transport.write(JSON_RESPONSE)
            del self.buffer[: self.need]
            self.need = -1


async def serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(CannedHttp, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(serve(int(sys.argv[1])))
    except KeyboardInterrupt:
        pass
