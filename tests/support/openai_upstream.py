"""A local OpenAI-compatible upstream for end-to-end tests and benchmarks.

Real sockets, real HTTP/1.1 (keep-alive, chunked SSE). What it does is chosen
by the ``model`` the router sends, so one server serves every scenario:

- ``echo-*``: a normal answer; streamed when asked, with usage when asked;
  tool calls when the request offers tools.
- ``slow-*``: a stream whose chunks wait on ``server.release`` (an Event) after
  the first one, to show the router relays before the upstream has finished.
- ``fail-<status>-<n>-*``: answers <status> for the first <n> requests, then echoes.
- ``hang-*``: accepts and never answers (until the server stops).
- ``garbage-*``: 200 with a body that is not JSON.
- ``nousage-*``: like echo, never reports usage.
- ``breaks-*``: a stream that stops mid-answer (the connection drops).
- ``quotes-key-*``: a 401 whose message quotes the key it was sent.
- ``says-<words>``: answers with <words> (e.g. a tier name for the LLM classifier).

Every request is kept in ``server.received`` (path, headers, raw body bytes).
"""

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = "Hello from the test upstream."


class UpstreamHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self._json(200, {"object": "list", "data": []})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        server = self.server
        with server.lock:
            server.received.append(
                {"path": self.path, "headers": dict(self.headers.items()), "body": raw}
            )
        try:
            body = json.loads(raw)
        except ValueError:
            return self._json(400, {"error": {"message": "bad json", "type": "x", "code": None}})
        model = body.get("model", "")
        failing = re.match(r"fail-(\d+)-(\d+)", model)
        if failing:
            status, times = int(failing.group(1)), int(failing.group(2))
            with server.lock:
                seen = server.counts.get(model, 0)
                server.counts[model] = seen + 1
            if seen < times:
                return self._json(
                    status, {"error": {"message": f"scripted {status}", "type": "x", "code": None}}
                )
        if model.startswith("quotes-key"):
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            message = f"Incorrect API key provided: {key}"
            return self._json(401, {"error": {"message": message, "type": "x", "code": None}})
        if model.startswith("hang"):
            server.stopping.wait(60)
            return
        if model.startswith("garbage"):
            return self._raw(200, b"<html>not json</html>", "text/html")
        if body.get("stream"):
            return self._stream(body, slow=model.startswith("slow"))
        return self._json(200, self._completion(body))

    def _completion(self, body):
        model = body.get("model", "")
        text = model[len("says-") :] if model.startswith("says-") else ANSWER
        message = {"role": "assistant", "content": text}
        finish = "stop"
        if body.get("tools"):
            name = body["tools"][0]["function"]["name"]
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": name, "arguments": '{"path": "README.md"}'},
                    }
                ],
            }
            finish = "tool_calls"
        result = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if not body.get("model", "").startswith("nousage"):
            result["usage"] = {
                "prompt_tokens": 11,
                "completion_tokens": 7,
                "total_tokens": 18,
                "prompt_tokens_details": {"cached_tokens": 3},
            }
        return result

    def _chunk(self, body, delta, finish=None):
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def _stream(self, body, slow):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunks = [self._chunk(body, {"role": "assistant", "content": ""})]
        if body.get("tools"):
            name = body["tools"][0]["function"]["name"]
            chunks.append(
                self._chunk(
                    body,
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ]
                    },
                )
            )
            chunks.append(
                self._chunk(
                    body,
                    {
                        "tool_calls": [
                            {"index": 0, "function": {"arguments": '{"path": "README.md"}'}}
                        ]
                    },
                )
            )
            chunks.append(self._chunk(body, {}, "tool_calls"))
        else:
            for word in ANSWER.split(" "):
                chunks.append(self._chunk(body, {"content": word + " "}))
            chunks.append(self._chunk(body, {}, "stop"))
        wants_usage = (body.get("stream_options") or {}).get("include_usage")
        if wants_usage and not body.get("model", "").startswith("nousage"):
            chunks.append(
                {
                    "id": "chatcmpl-test",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": body.get("model"),
                    "choices": [],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                }
            )
        try:
            for i, chunk in enumerate(chunks):
                self._write_chunk(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                if slow and i == 0:
                    self.server.release.wait(30)
                if i == 1 and body.get("model", "").startswith("breaks"):
                    self.close_connection = True
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    return
            self._write_chunk(b"data: [DONE]\n\n")
            self._write_chunk(b"")
            self.server.stream_finished.set()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _write_chunk(self, data: bytes):
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _json(self, status, payload):
        self._raw(status, json.dumps(payload).encode(), "application/json")

    def _raw(self, status, data, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class UpstreamServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address=("127.0.0.1", 0)):
        super().__init__(address, UpstreamHandler)
        self.lock = threading.Lock()
        self.received = []
        self.counts = {}
        self.release = threading.Event()
        self.stopping = threading.Event()
        self.stream_finished = threading.Event()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def base_url(self):
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self.stopping.set()
        self.release.set()
        self.shutdown()
        self.server_close()

    def bodies(self):
        return [json.loads(r["body"]) for r in self.received]


if __name__ == "__main__":  # python tests/support/openai_upstream.py PORT — for benchmarks by hand
    import sys

    server = UpstreamServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 9099))
    print(f"test upstream on {server.base_url}", flush=True)
    server.serve_forever()
