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
import time

from tests.support.local_server import LocalHandler, LocalServer

ANSWER = "Hello from the test upstream."


class UpstreamHandler(LocalHandler):
    def do_GET(self):
        self._json(200, {"object": "list", "data": []})

    def do_POST(self):
        raw = self._read_request()
        server = self.server
        try:
            body = json.loads(raw)
        except ValueError:
            return self._json(400, {"error": {"message": "bad json", "type": "x", "code": None}})
        model = body.get("model", "")
        failing = re.match(r"fail-(\d+)-(\d+)", model)
        if failing:
            status, times = int(failing.group(1)), int(failing.group(2))
            if server.within_first(model, times):
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

    def _json(self, status, payload):
        self._raw(status, json.dumps(payload).encode(), "application/json")


class UpstreamServer(LocalServer):
    def __init__(self, address=("127.0.0.1", 0)):
        super().__init__(address, UpstreamHandler)

    @property
    def base_url(self):
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def bodies(self):
        return [json.loads(r["body"]) for r in self.received]


if __name__ == "__main__":  # python -m tests.support.openai_upstream PORT — for benchmarks by hand
    import sys

    server = UpstreamServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 9099))
    print(f"test upstream on {server.base_url}", flush=True)
    server.serve_forever()
