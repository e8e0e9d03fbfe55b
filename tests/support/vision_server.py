"""A local OpenAI-compatible vision model: it "describes" an image by its hash, or fails on cue.

``mode``: ok (a description naming the image's SHA-256 prefix), status_500,
empty (a blank description), slow (answers after ``delay`` seconds).
``described`` lists the image URLs it was asked about, in order.
"""

import hashlib
import json
import time

from tests.support.local_server import LocalHandler, LocalServer


def description_of(url: str) -> str:
    return f"a red square labelled OK ({hashlib.sha256(url.encode()).hexdigest()[:8]})"


class VisionHandler(LocalHandler):
    def do_POST(self):
        body = json.loads(self._read_request() or b"{}")
        server = self.server
        parts = [p for m in body.get("messages", []) for p in m.get("content") or []]
        urls = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
        server.described.extend(urls)
        if server.mode == "status_500":
            return self._raw(500, b'{"error": {"message": "boom"}}', "application/json")
        if server.mode == "slow":
            server.stopping.wait(server.delay)
        text = "" if server.mode == "empty" else description_of(urls[0] if urls else "")
        answer = {
            "id": "vision-1",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
        }
        self._raw(200, json.dumps(answer).encode(), "application/json")


class VisionServer(LocalServer):
    def __init__(self, address=("127.0.0.1", 0)):
        super().__init__(address, VisionHandler)
        self.mode = "ok"
        self.delay = 3.0
        self.described = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"
