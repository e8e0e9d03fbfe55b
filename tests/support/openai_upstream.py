"""A local OpenAI-compatible upstream for end-to-end tests and benchmarks.

Real sockets, real HTTP/1.1 (keep-alive, chunked SSE). What it does is chosen
by the ``model`` the router sends, so one server serves every scenario:

- ``echo-*``: a normal answer; streamed when asked, with usage when asked;
  a tool call when the request offers tools, unless the last message is a
  tool result: that is answered with text naming the results' ids.
- ``parallel-*``: like echo, with two tool calls at once.
- ``slow-*``: a stream whose chunks wait on ``server.release`` (an Event) after
  the first two (the role, the first word), to show the router relays before
  the upstream has finished.
- ``fail-<status>-<n>-*``: answers <status> for the first <n> requests, then echoes.
- ``hang-*``: accepts and never answers (until the server stops).
- ``garbage-*``: 200 with a body that is not JSON.
- ``nousage-*``: like echo, never reports usage.
- ``breaks-*``: a stream that stops mid-answer (the connection drops).
- ``quotes-key-*``: a 401 whose message quotes the key it was sent.
- ``says-<words>``: answers with <words> (e.g. a tier name for the LLM classifier).
- ``*splitkey*`` (chat completions and /v1/responses): a stream that names the
  key it was sent, cut between two text deltas (tests/support/split_key.py).
- ``leaks-key-*``: echoes the key it was sent in every spelling JSON allows (as is,
  fully and partly ``\\u``-escaped), in a chunked 200 body, in every SSE event
  (one of them split across writes) and, for ``leaks-key-401``, in an error.
- ``notsse-*``: a 200 "stream" that is plain text; ``badjson-*``: a stream whose
  second event is not JSON; ``stall-*``: a stream that stops after one event;
  ``errorevent-*``: a stream that reports an error in an event of its own.
- ``drip-*``: a plain answer sent one byte every 50 ms (no read ever times out).
- ``gzip-*``: a plain answer, gzip-compressed (as OpenAI's API sends them);
  ``gzipbomb-*``: 200 KB of gzip that decodes to 200 MB.
- ``oddusage-*``: usage counts of the wrong types; ``hugeusage-*``: counts past 2**31.
- ``redirect-<status>-*``: that 3xx status, pointing elsewhere.
- ``ra-<seconds>-<n>-*``: 429 with ``Retry-After: <seconds>`` for the first <n>
  requests, then echoes.
- ``script-*``: plays ``server.script``, a list of steps (``{"call": name,
  "arguments": {...}}`` or ``{"text": ...}``): the step is the number of tool
  results in the request, so an agent is led through several tool rounds to
  a final answer; past the end, the last step.
- ``recall-*``, ``recallmixed-*``: a model that recalls what pinch trimmed
  (tests/support/recall_upstream.py), else like echo; ``recallscript-*``: the same,
  else it plays ``script``.
- ``cache-*``: like echo, with usage as a provider that caches prompt prefixes by
  itself reports it: ``prompt_tokens`` the messages' characters / 3, and
  ``prompt_tokens_details.cached_tokens`` the tokens of the leading messages
  equal to the previous ``cache-*`` request's (OpenAI's automatic cache).

POST /v1/responses is the Responses API, served by
tests/support/responses_upstream.py.

Every request is kept in ``server.received`` (path, headers, raw body bytes,
the monotonic time it arrived, and the client's address, which tells
connections apart).
"""

import functools
import gzip
import json
import re
import time

from tests.support import recall_upstream, responses_upstream, split_key
from tests.support.local_server import LocalHandler, LocalServer
from tests.support.scripted import script_step, usage_of

ANSWER = "Hello from the test upstream."


def _tool_name(body) -> str:
    function = body["tools"][0].get("function") or {}
    return function.get("name") or "tool"


class UpstreamHandler(LocalHandler):
    def do_GET(self):
        self._json(200, {"object": "list", "data": []})

    def do_POST(self):
        raw = self._read_request()
        server = self.server
        if not self.path.startswith("/v1/"):
            # What Ollama answers a base_url without /v1: a bare text 404.
            return self._raw(404, b"404 page not found", "text/plain")
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
        retry_after = re.match(r"ra-(\d+)-(\d+)", model)
        if retry_after and server.within_first(model, int(retry_after.group(2))):
            return self._raw(
                429,
                b'{"error": {"message": "slow down", "type": "x", "code": null}}',
                "application/json",
                {"Retry-After": retry_after.group(1)},
            )
        redirect = re.match(r"redirect-(\d+)", model)
        if redirect:
            location = {"Location": "http://127.0.0.1:9/elsewhere"}
            return self._raw(int(redirect.group(1)), b"", "text/plain", location)
        if model.startswith("leaks-key"):
            return self._leak_key(body, model)
        if model.startswith(("notsse", "badjson", "stall", "errorevent")) and body.get("stream"):
            return self._broken_stream(body, model)
        if model.startswith("drip"):
            return self._drip(json.dumps(self._completion(body)).encode())
        if model.startswith("gzipbomb") and not body.get("stream"):
            return self._raw(200, gzip_bomb(), "application/json", {"Content-Encoding": "gzip"})
        if model.startswith("gzip") and not body.get("stream"):
            data = gzip.compress(json.dumps(self._completion(body)).encode())
            return self._raw(200, data, "application/json", {"Content-Encoding": "gzip"})
        if model.startswith("quotes-key"):
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            message = f"Incorrect API key provided: {key}"
            return self._json(401, {"error": {"message": message, "type": "x", "code": None}})
        if model.startswith("hang"):
            server.stopping.wait(60)
            return
        if model.startswith("garbage"):
            return self._raw(200, b"<html>not json</html>", "text/html")
        if self.path.endswith("/responses"):
            if "splitkey" in model:
                key = self._sent_key()
                return responses_upstream.answer(self, body, split_key.answer(key), key)
            return responses_upstream.answer(self, body, ANSWER)
        if body.get("stream"):
            return self._stream(body, slow=model.startswith("slow"))
        return self._json(200, self._completion(body))

    def _script_step(self, body) -> dict | None:
        if not body.get("model", "").startswith(("script", "recallscript")):
            return None
        return script_step(self.server, body.get("messages") or [], "tool")

    def _recall_step(self, body) -> dict | None:
        if not body.get("model", "").startswith("recall"):
            return None
        return recall_upstream.step(recall_upstream.chat_seen(body), body["model"])

    def _tool_calls(self, body) -> list:
        """The calls to answer with: none after tool results or without tools offered."""
        messages = body.get("messages") or [{}]
        recall = self._recall_step(body)
        if recall is not None:
            return _recall_calls(recall, len(messages))
        step = self._script_step(body)
        if step is not None:
            if "call" not in step:
                return []
            done = sum(1 for m in messages if m.get("role") == "tool")
            arguments = json.dumps(step.get("arguments") or {})
            return [
                {
                    "id": f"call_script_{done + 1}",
                    "type": "function",
                    "function": {"name": step["call"], "arguments": arguments},
                }
            ]
        if not body.get("tools") or messages[-1].get("role") == "tool":
            return []
        name = _tool_name(body)
        paths = ["a.py", "b.py"] if body.get("model", "").startswith("parallel") else ["README.md"]
        return [
            {
                "id": f"call_{k + 1}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps({"path": path})},
            }
            for k, path in enumerate(paths)
        ]

    def _text(self, body) -> str:
        model = body.get("model", "")
        recall = self._recall_step(body)
        if recall is not None and "text" in recall:
            return recall["text"]
        step = self._script_step(body)
        if step is not None and "text" in step:
            return step["text"]
        results = []
        for message in reversed(body.get("messages") or ()):
            if message.get("role") != "tool":
                break
            results.insert(0, message.get("tool_call_id"))
        if results:
            return f"Got {len(results)} results: {', '.join(results)}"
        return model[len("says-") :] if model.startswith("says-") else ANSWER

    def _completion(self, body):
        model = body.get("model", "")
        message = {"role": "assistant", "content": self._text(body)}
        finish = "stop"
        calls = self._tool_calls(body)
        if calls:
            message = {"role": "assistant", "content": None, "tool_calls": calls}
            finish = "tool_calls"
        result = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if model.startswith("cache"):
            result["usage"] = self._cache_usage(body)
        elif model.startswith(("oddusage", "hugeusage")):
            result["usage"] = odd_usage(model)
        elif not model.startswith("nousage"):
            result["usage"] = {
                "prompt_tokens": 11,
                "completion_tokens": 7,
                "total_tokens": 18,
                "prompt_tokens_details": {"cached_tokens": 3},
            }
        return result

    def _cache_usage(self, body):
        messages = body.get("messages") or []
        sizes = [len(_text(m)) // 3 for m in messages]
        with self.server.lock:
            previous, self.server.cached_prefix = self.server.cached_prefix, messages
        shared = 0
        for before, now in zip(previous, messages):
            if before != now:
                break
            shared += 1
        prompt = sum(sizes)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": 7,
            "total_tokens": prompt + 7,
            "prompt_tokens_details": {"cached_tokens": sum(sizes[:shared])},
        }

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
        calls = self._tool_calls(body)
        for k, call in enumerate(calls):
            start = {**call, "index": k, "function": {**call["function"], "arguments": ""}}
            arguments = call["function"]["arguments"]
            chunks.append(self._chunk(body, {"tool_calls": [start]}))
            for cut in (arguments[:6], arguments[6:]):
                piece = {"index": k, "function": {"arguments": cut}}
                chunks.append(self._chunk(body, {"tool_calls": [piece]}))
        if calls:
            chunks.append(self._chunk(body, {}, "tool_calls"))
        else:
            if "splitkey" in body.get("model", ""):
                pieces = split_key.deltas(self._sent_key())
            else:
                pieces = [word + " " for word in self._text(body).split(" ")]
            for piece in pieces:
                chunks.append(self._chunk(body, {"content": piece}))
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
                    "usage": odd_usage(body.get("model", "")) or usage_of(body),
                }
            )
        try:
            for i, chunk in enumerate(chunks):
                self._write_chunk(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                if slow and i == 1:
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

    def _sent_key(self) -> str:
        return self.headers.get("Authorization", "").removeprefix("Bearer ")

    def _key_spellings(self) -> str:
        """The key as JSON string content: as is, fully escaped, half escaped."""
        key = self._sent_key()
        escaped = "".join(f"\\u{ord(c):04x}" for c in key)
        half = key[: len(key) // 2] + escaped[6 * (len(key) // 2) :]
        return f"plain {key} escaped {escaped} half {half}"

    def _leak_key(self, body, model):
        spellings = self._key_spellings()
        if model.startswith("leaks-key-401"):
            text = '{"error": {"message": "bad key KEYS", "type": "x", "code": null}}'.replace(
                "KEYS", spellings
            )
            return self._raw(401, text.encode(), "application/json")
        self.send_response(200)
        content_type = "text/event-stream" if body.get("stream") else "application/json"
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if not body.get("stream"):
            text = (
                '{"id": "x", "object": "chat.completion", "model": "m", "choices": [{"index": 0, '
                '"message": {"role": "assistant", "content": "KEYS"}, "finish_reason": "stop"}], '
                '"usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}'
            ).replace("KEYS", spellings)
            data = text.encode()
            middle = data.index(b"plain ") + 10  # split inside the plain key
            self._write_chunk(data[:middle])
            self._write_chunk(data[middle:])
        else:
            event = (
                'data: {"id": "x", "object": "chat.completion.chunk", "model": "m", "choices": '
                '[{"index": 0, "delta": {"content": "KEYS"}, "finish_reason": null}]}\n\n'
            ).replace("KEYS", spellings)
            data = event.encode()
            self._write_chunk(data)
            middle = data.index(b"plain ") + 10
            self._write_chunk(data[:middle])
            time.sleep(0.05)
            self._write_chunk(data[middle:])
            self._write_chunk(b": comment %s\n\n" % spellings.encode())
            self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")

    def _broken_stream(self, body, model):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if model.startswith("notsse"):
                self._write_chunk(b"<html>this is not a stream</html>\n\n")
            else:
                first = self._chunk(body, {"role": "assistant", "content": "Hi"})
                self._write_chunk(b"data: " + json.dumps(first).encode() + b"\n\n")
                if model.startswith("stall"):
                    self.server.stopping.wait(30)
                    return
                if model.startswith("errorevent"):
                    self._write_chunk(
                        b'data: {"error": {"message": "overloaded", "type": "x"}}\n\n'
                    )
                else:
                    self._write_chunk(b"data: {this is not json\n\n")
                self._write_chunk(b"data: [DONE]\n\n")
            self._write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _json(self, status, payload):
        self._raw(status, json.dumps(payload).encode(), "application/json")


def _recall_calls(step: dict, turn: int) -> list:
    """A recall step's calls: the agent's tool first when it is mixed, the router's last."""
    if "recall" not in step:
        return []
    calls = []
    if step["also"]:
        arguments = json.dumps({"path": "a.py"})
        calls.append({"name": step["also"], "arguments": arguments})
    arguments = json.dumps(recall_upstream.recall_arguments(step["recall"]))
    calls.append({"name": recall_upstream.RECALL_TOOL, "arguments": arguments})
    return [
        {"id": f"call_{turn}_{k}", "type": "function", "function": call}
        for k, call in enumerate(calls)
    ]


@functools.cache
def gzip_bomb() -> bytes:
    """200 MB of JSON whitespace, gzip-compressed to some 200 KB."""
    return gzip.compress(b"{" + b" " * (200 * 1024 * 1024) + b"}", compresslevel=9)


def odd_usage(model: str) -> dict | None:
    """``oddusage-*``: counts of every wrong type; ``hugeusage-*``: counts no column can hold."""
    if model.startswith("oddusage"):
        return {
            "prompt_tokens": "11",
            "completion_tokens": {"n": 7},
            "total_tokens": 18.5,
            "prompt_tokens_details": 5,
            "completion_tokens_details": {"reasoning_tokens": None},
        }
    if model.startswith("hugeusage"):
        return {"prompt_tokens": 10**20, "completion_tokens": 2**31, "total_tokens": 10**20}
    return None


def _text(message):
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class UpstreamServer(LocalServer):
    def __init__(self, address=("127.0.0.1", 0), handler=None):
        super().__init__(address, handler or UpstreamHandler)
        self.cached_prefix = []
        self.script = [{"text": ANSWER}]
        # What a script model plays once the agent went on from a compaction summary.
        self.after_compaction = [{"text": ANSWER}]

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
