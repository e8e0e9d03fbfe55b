"""A local server that speaks the Anthropic Messages API, for end-to-end tests.

Real sockets, real HTTP/1.1, ``POST /v1/messages``, plain and streamed. It is
held to the protocol from both sides with the official ``anthropic`` SDK:

- what it receives is checked against the SDK's request types (no unknown
  key, every required key, known block types) and against the documented
  rules the SDK cannot express (alternating turns, every ``tool_use``
  answered by a ``tool_result`` at the start of the next user turn, tools
  defined when the history has tool blocks, at most 4
  ``cache_control`` breakpoints with no 1-hour one after a 5-minute one, a
  thinking budget of at least 1,024 below
  ``max_tokens``); a request that breaks one gets the API's 400;
- every answer, event and error it sends is first parsed with the SDK's
  response types (``Message``, ``RawMessageStreamEvent``, ``ErrorResponse``).
  A mismatch on either side lands in ``server.protocol_errors``, which the
  fixture asserts empty.

It keeps a prompt cache as documented: a breakpoint's prefix (tools, system,
messages, in order, ``cache_control`` itself not part of the content) is
written when at least ``min_cacheable_tokens`` long, and a later request
reads the longest cached prefix found at one of its breakpoints or up to 20
blocks before one. Tokens are counted as 4 characters of a block's JSON.

What it answers is chosen by the model name:

- ``claude-fail-<status>-<n>[-ra<seconds>]-*``: that error for the first n
  requests (with a ``retry-after`` header when ``ra`` is given), then as below;
- ``claude-slow-*``: a stream that waits on ``server.release`` after its first
  text delta;
- ``claude-streamerror-*``: a stream that sends an ``overloaded_error`` event
  after its first text delta;
- ``claude-overloaded-<n>-*``: for the first n streams, an ``overloaded_error``
  event as the only event (after the 200), then as below;
- ``claude-refuse-*``: stop reason ``refusal``;
- ``claude-hang-*``: accepts and never answers (until the server stops);
- ``claude-parallel-*``: two tool calls at once when tools are offered;
- ``POST /v1/messages/count_tokens``: the request's tokens, counted as the cache counts them;
- ``claude-leaks-key-*``: answers and streams the key it was sent, every
  mention ``\\u``-escaped (a spelling only decoding reveals);
- ``claude-splitkey-*``: streams the key it was sent cut between two text deltas
  (tests/support/split_key.py);
- ``claude-drip-*``: a plain answer sent one byte every 50 ms;
- ``claude-gzip-*``: a plain answer, gzip-compressed;
- ``claude-recall-*``, ``claude-recallmixed-*``: a model that recalls what pinch
  trimmed (tests/support/recall_upstream.py), a line of text before its calls;
- otherwise: text, or one tool call when tools are offered and the last turn
  is not tool results; a turn of tool results is answered naming their ids.
  With thinking enabled a thinking block comes first.
"""

import gzip
import hashlib
import json
import re
import typing

from anthropic import types as sdk
from anthropic.types import beta
from anthropic.types.beta.message_create_params import (
    MessageCreateParamsBase as BetaMessageCreateParamsBase,
)
from anthropic.types.message_count_tokens_params import MessageCountTokensParams
from anthropic.types.message_create_params import MessageCreateParamsBase
from pydantic import TypeAdapter, ValidationError

from tests.support import recall_upstream, split_key
from tests.support.local_server import LocalHandler, LocalServer

ANSWER = "Hello from the Anthropic test upstream."
THOUGHT = "The user said hello; I should greet them back."
CHARS_PER_TOKEN = 4
LOOKBACK_BLOCKS = 20
MAX_BREAKPOINTS = 4
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _keys(typed_dict) -> tuple[set, set]:
    hints = typing.get_type_hints(typed_dict, include_extras=True)
    required = {k for k, v in hints.items() if typing.get_origin(v) is typing.Required}
    return required, set(hints)


REQUEST_KEYS = _keys(MessageCreateParamsBase)
REQUEST_KEYS[1].add("stream")
# The SDK sends anthropic-version 2026-10-21, which refuses sampling parameters;
# the older versions still accept them.
SAMPLING_REMOVED_IN = "2026-10-21"
SAMPLING_KEYS = {"temperature", "top_p", "top_k"}
BLOCK_KEYS = {
    "text": _keys(sdk.TextBlockParam),
    "image": _keys(sdk.ImageBlockParam),
    "tool_use": _keys(sdk.ToolUseBlockParam),
    "tool_result": _keys(sdk.ToolResultBlockParam),
    "thinking": _keys(sdk.ThinkingBlockParam),
    "redacted_thinking": _keys(sdk.RedactedThinkingBlockParam),
    "document": _keys(sdk.DocumentBlockParam),
}
COUNT_KEYS = _keys(MessageCountTokensParams)
SIGNATURE = "sig-test"
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
TOOL_KEYS = _keys(sdk.ToolParam)
IMAGE_SOURCE_KEYS = {
    "base64": _keys(sdk.Base64ImageSourceParam),
    "url": _keys(sdk.URLImageSourceParam),
}
TOOL_CHOICE_KEYS = {
    "auto": _keys(sdk.ToolChoiceAutoParam),
    "any": _keys(sdk.ToolChoiceAnyParam),
    "tool": _keys(sdk.ToolChoiceToolParam),
    "none": _keys(sdk.ToolChoiceNoneParam),
}
EVENT = TypeAdapter(sdk.RawMessageStreamEvent)

# With an anthropic-beta header the API takes the beta request shape (Claude
# Code sends context_management, beta tool fields and so on).
BETA_REQUEST_KEYS = _keys(BetaMessageCreateParamsBase)
BETA_REQUEST_KEYS[1].add("stream")
BETA_REQUEST_KEYS[1].discard("betas")  # the SDK sends these as the header
BETA_BLOCK_KEYS = {
    "text": _keys(beta.BetaTextBlockParam),
    "image": _keys(beta.BetaImageBlockParam),
    "tool_use": _keys(beta.BetaToolUseBlockParam),
    "tool_result": _keys(beta.BetaToolResultBlockParam),
    "thinking": _keys(beta.BetaThinkingBlockParam),
    "redacted_thinking": _keys(beta.BetaRedactedThinkingBlockParam),
    "document": _keys(beta.BetaRequestDocumentBlockParam),
}


class RequestRejected(Exception):
    pass


def _check_keys(where: str, value, keys: tuple[set, set]):
    if not isinstance(value, dict):
        raise RequestRejected(f"{where}: Input should be an object")
    required, allowed = keys
    missing = required - set(value)
    if missing:
        raise RequestRejected(f"{where}.{sorted(missing)[0]}: Field required")
    extra = set(value) - allowed
    if extra:
        raise RequestRejected(f"{where}.{sorted(extra)[0]}: Extra inputs are not permitted")


MID_CONVERSATION_SYSTEM = "mid-conversation-system-2026-04-07"


def _check_system_turn(where: str, content) -> None:
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list) or not blocks:
        raise RequestRejected(f"{where}.content: a system message needs text")
    for j, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") != "text" or not block.get("text"):
            raise RequestRejected(f"{where}.content.{j}: a system message holds text blocks only")


def check_request(
    body, version: str = SAMPLING_REMOVED_IN, betas: bool = False, beta_flags: str = ""
) -> None:
    """Raise RequestRejected with the API's kind of message for a request it would refuse.

    Under the ``mid-conversation-system`` beta (Claude Code sends it) a turn
    of role ``system`` holding text may stand anywhere in ``messages``; it
    takes no part in the user/assistant alternation.
    """
    system_turns = MID_CONVERSATION_SYSTEM in beta_flags
    required, allowed = BETA_REQUEST_KEYS if betas else REQUEST_KEYS
    if version < SAMPLING_REMOVED_IN:
        allowed = allowed | SAMPLING_KEYS
    _check_keys("body", body, (required, allowed))
    if not version:
        raise RequestRejected("anthropic-version: header is required")
    block_keys = BETA_BLOCK_KEYS if betas else BLOCK_KEYS
    for i, block in enumerate(body.get("system") or ()):
        _check_keys(f"system.{i}", block, block_keys["text"])
        if not block.get("text"):
            raise RequestRejected(f"system.{i}: text content blocks must be non-empty")
    for i, tool in enumerate(body.get("tools") or ()):
        _check_keys(f"tools.{i}", tool, _keys(beta.BetaToolParam) if betas else TOOL_KEYS)
    if "tool_choice" in body:
        choice = body["tool_choice"]
        _check_keys("tool_choice", choice, TOOL_CHOICE_KEYS.get(choice.get("type"), ({"?"}, set())))
    thinking = body.get("thinking")
    # "adaptive" (what Claude Code sends) and "disabled" have no budget to check.
    if thinking is not None and thinking.get("type") == "enabled":
        if thinking.get("budget_tokens", 0) < 1024:
            raise RequestRejected("thinking.budget_tokens: must be at least 1024")
        if thinking["budget_tokens"] >= body["max_tokens"]:
            raise RequestRejected("max_tokens must be greater than thinking.budget_tokens")
        if "temperature" in body:
            raise RequestRejected("temperature may only be set to 1 when thinking is enabled")
    open_calls = set()
    for i, turn in enumerate(body["messages"]):
        where = f"messages.{i}"
        if system_turns and turn.get("role") == "system" and set(turn) == {"role", "content"}:
            _check_system_turn(where, turn["content"])
            continue
        if turn.get("role") not in ("user", "assistant") or set(turn) != {"role", "content"}:
            raise RequestRejected(f"{where}: a message has a role (user or assistant) and content")
        # Consecutive turns of one role are combined into one, as the API documents
        # (Claude Code sends two user turns after /compact): no alternation check.
        blocks = turn["content"]
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        seen_other = False
        for j, block in enumerate(blocks):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind not in block_keys:
                raise RequestRejected(f"{where}.content.{j}.type: unknown block type {kind!r}")
            _check_keys(f"{where}.content.{j}", block, block_keys[kind])
            if kind == "text" and not block["text"]:
                raise RequestRejected(f"{where}.content.{j}: text content blocks must be non-empty")
            if kind == "image":
                source = block["source"]
                _check_keys(
                    f"{where}.content.{j}.source",
                    source,
                    IMAGE_SOURCE_KEYS.get(source.get("type"), ({"?"}, set())),
                )
            if kind == "tool_result":
                if turn["role"] != "user" or seen_other:
                    raise RequestRejected(
                        f"{where}: tool_result blocks must come first in a user turn"
                    )
                open_calls.discard(block["tool_use_id"])
            else:
                seen_other = True
            if kind == "tool_use" and turn["role"] != "assistant":
                raise RequestRejected(f"{where}: tool_use blocks belong to assistant turns")
            if kind == "thinking" and block["signature"] != SIGNATURE:
                raise RequestRejected(f"{where}.content.{j}: Invalid signature in thinking block")
        if turn["role"] == "user" and open_calls:
            raise RequestRejected(
                f"{where}: tool_use ids were found without tool_result blocks immediately "
                f"after: {', '.join(sorted(open_calls))}"
            )
        if turn["role"] == "assistant":
            open_calls = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    tool_blocks = [
        b
        for t in body["messages"]
        if isinstance(t["content"], list)
        for b in t["content"]
        if b.get("type") in ("tool_use", "tool_result")
    ]
    if tool_blocks and not body.get("tools"):
        raise RequestRejected(
            "Requests which include tool_use or tool_result blocks must define tools."
        )
    answers = [t for t in body["messages"] if t["role"] == "assistant"]
    last = answers[-1]["content"] if answers else []
    calls = isinstance(last, list) and any(b.get("type") == "tool_use" for b in last)
    if thinking and calls and last[0].get("type") not in ("thinking", "redacted_thinking"):
        raise RequestRejected(
            "Expected `thinking` or `redacted_thinking`, but found "
            f"`{last[0].get('type')}`. When `thinking` is enabled, a final `assistant` "
            "message must start with a thinking block."
        )
    ttls = [
        block["cache_control"].get("ttl", "5m")
        for _, block in prefix_blocks(body)
        if "cache_control" in block
    ]
    last_long = max((i for i, ttl in enumerate(ttls) if ttl == "1h"), default=-1)
    if last_long > 0 and "5m" in ttls[:last_long]:
        raise RequestRejected(
            "A cache_control block with ttl='1h' must not come after one with ttl='5m'."
        )
    if len(cache_blocks(body)) > MAX_BREAKPOINTS:
        raise RequestRejected(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided."
        )


def prefix_blocks(body) -> list[tuple[str, dict]]:
    """Every cacheable block in cache order (tools, system, messages), with where it sits."""
    blocks = [("tools", tool) for tool in body.get("tools") or ()]
    blocks += [("system", block) for block in body.get("system") or ()]
    for turn in body["messages"]:
        content = turn["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        blocks += [(turn["role"], block) for block in content]
    return blocks


def cache_blocks(body) -> list[int]:
    return [i for i, (_, block) in enumerate(prefix_blocks(body)) if "cache_control" in block]


def without_markers(block: dict) -> dict:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _unmarked(value):
    """``value`` with every ``cache_control`` marker left out: they are not content."""
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def prefix_keys(body) -> tuple[list[str], list[int]]:
    """For each block: the hash of the prefix ending there, and that prefix's tokens."""
    keys, reach = [], []
    digest = hashlib.sha256()
    total = 0
    for where, block in prefix_blocks(body):
        text = json.dumps([where, without_markers(block)], sort_keys=True)
        digest.update(text.encode())
        keys.append(digest.copy().hexdigest())
        total += len(text) // CHARS_PER_TOKEN
        reach.append(total)
    return keys, reach


class AnthropicHandler(LocalHandler):
    def do_POST(self):
        raw = self._read_request()
        server = self.server
        self.leaked_key = ""
        if self.path == "/v1/messages/count_tokens":
            return self._count_tokens(raw)
        if self.path != "/v1/messages":
            return self._error(404, f"Not found: {self.path}")
        try:
            body = json.loads(raw)
            check_request(
                body,
                self.headers.get("anthropic-version") or "",
                betas=bool(self.headers.get("anthropic-beta")),
                beta_flags=self.headers.get("anthropic-beta") or "",
            )
        except (ValueError, RequestRejected, KeyError, TypeError, AttributeError) as error:
            server.note_error(f"request: {error}")
            return self._error(400, str(error))
        model = body["model"]
        failing = re.match(r"claude-fail-(\d+)-(\d+)(?:-ra(\d+))?", model)
        if failing:
            status, times = int(failing.group(1)), int(failing.group(2))
            if server.within_first(model, times):
                headers = {"retry-after": failing.group(3)} if failing.group(3) else {}
                return self._error(status, f"scripted {status}", headers)
        if model.startswith("claude-hang"):
            server.stopping.wait(60)
            return
        content, stop_reason = self._content(body)
        usage = server.cache_usage(body)
        usage["output_tokens"] = sum(len(json.dumps(b)) for b in content) // CHARS_PER_TOKEN
        message = {
            "id": f"msg_{len(server.received):04d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }
        if "diagnostics" in body:
            message["diagnostics"] = server.diagnose(message["id"], body, usage)
        if model.startswith("claude-leaks-key"):
            self.leaked_key = self.headers.get("x-api-key", "")
            message["content"] = [{"type": "text", "text": f"the key is {self.leaked_key}"}]
        if model.startswith("claude-splitkey"):
            key = self.headers.get("x-api-key", "")
            message["content"] = [{"type": "text", "text": split_key.answer(key)}]
        if body.get("stream"):
            return self._stream(message, model)
        server.check(sdk.Message.model_validate, message)
        if model.startswith("claude-drip"):
            return self._drip(json.dumps(message).encode())
        if model.startswith("claude-gzip"):
            data = gzip.compress(json.dumps(message).encode())
            return self._raw(200, data, "application/json", {"Content-Encoding": "gzip"})
        return self._json(200, message)

    def _count_tokens(self, raw):
        try:
            body = json.loads(raw)
            _check_keys("body", body, COUNT_KEYS)
        except (ValueError, RequestRejected) as error:
            self.server.note_error(f"count_tokens request: {error}")
            return self._error(400, str(error))
        _, reach = prefix_keys(body)
        return self._json(200, {"input_tokens": reach[-1] if reach else 0})

    def _spelled(self, data: bytes) -> bytes:
        """For claude-leaks-key: every mention of the key, \\u-escaped as JSON allows."""
        if not self.leaked_key:
            return data
        escaped = "".join(f"\\u{ord(c):04x}" for c in self.leaked_key)
        return data.replace(self.leaked_key.encode(), escaped.encode())

    def _content(self, body):
        model = body["model"]
        content = []
        if body.get("thinking"):
            content.append({"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE})
        last = body["messages"][-1]["content"]
        results = [
            b["tool_use_id"]
            for b in (last if isinstance(last, list) else ())
            if b.get("type") == "tool_result"
        ]
        if model.startswith("claude-refuse"):
            return content + [{"type": "text", "text": "I can't help with that."}], "refusal"
        if model.startswith("claude-recall"):
            recalled = self._recall(body, content)
            if recalled is not None:
                return recalled
        if results:
            text = f"Got {len(results)} results: {', '.join(results)}"
            return content + [{"type": "text", "text": text}], "end_turn"
        if body.get("tools") and body.get("tool_choice", {}).get("type") != "none":
            name = body["tools"][0]["name"]
            paths = ["a.py", "b.py"] if model.startswith("claude-parallel") else ["README.md"]
            turn = len(self.server.received)
            for k, path in enumerate(paths):
                content.append(
                    {
                        "type": "tool_use",
                        "id": f"toolu_{turn:02d}_{k}",
                        "name": name,
                        "input": {"path": path},
                    }
                )
            return content, "tool_use"
        return content + [{"type": "text", "text": ANSWER}], "end_turn"

    def _recall(self, body, content):
        step = recall_upstream.step(recall_upstream.messages_seen(body), body["model"][7:])
        if step is None:
            return None
        if "text" in step:
            return content + [{"type": "text", "text": step["text"]}], "end_turn"
        content.append({"type": "text", "text": "Let me read the whole log."})
        turn = len(self.server.received)
        if step["also"]:
            call = {"name": step["also"], "input": {"path": "a.py"}}
            content.append({"type": "tool_use", "id": f"toolu_{turn:02d}_a", **call})
        arguments = recall_upstream.recall_arguments(step["recall"])
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_{turn:02d}_r",
                "name": recall_upstream.RECALL_TOOL,
                "input": arguments,
            }
        )
        return content, "tool_use"

    def _stream(self, message, model):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        usage = message["usage"]
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {**usage, "output_tokens": 1},
        }
        overloaded = re.match(r"claude-overloaded-(\d+)", model)
        try:
            if overloaded and self.server.within_first(model, int(overloaded.group(1))):
                self._event(OVERLOADED)
                self._write_chunk(b"")
                return
            self._event({"type": "message_start", "message": start})
            self._event({"type": "ping"})
            for index, block in enumerate(message["content"]):
                if not self._block(index, block, model):
                    self._write_chunk(b"")  # the API ends the stream after an error event
                    return
            self._event(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                }
            )
            self._event({"type": "message_stop"})
            self._write_chunk(b"")
            self.server.stream_finished.set()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _block(self, index, block, model):
        kind = block["type"]
        if kind == "text":
            self._event(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                }
            )
            words = block["text"].split(" ")
            pieces = [w + " " for w in words[:-1]] + words[-1:]
            if model.startswith("claude-splitkey"):
                pieces = split_key.deltas(self.headers.get("x-api-key", ""))
            for k, piece in enumerate(pieces):
                self._event(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    }
                )
                if k == 0 and model.startswith("claude-slow"):
                    self.server.release.wait(30)
                if k == 0 and model.startswith("claude-streamerror"):
                    self._event(OVERLOADED)
                    return False
        elif kind == "thinking":
            self._event(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                }
            )
            self._event(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "thinking_delta", "thinking": block["thinking"]},
                }
            )
            self._event(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": block["signature"]},
                }
            )
        else:  # tool_use: the input arrives as partial JSON, in pieces
            self._event(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {**block, "input": {}},
                }
            )
            text = json.dumps(block["input"])
            for k in range(0, len(text), 5):
                self._event(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": text[k : k + 5]},
                    }
                )
        self._event({"type": "content_block_stop", "index": index})
        return True

    def _event(self, event):
        if event["type"] == "ping":
            if event != {"type": "ping"}:
                self.server.note_error(f"bad ping {event}")
        elif event["type"] == "error":
            self.server.check(sdk.ErrorResponse.model_validate, event)
        else:
            self.server.check(EVENT.validate_python, event)
        data = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
        self._write_chunk(self._spelled(data))

    def _error(self, status, message, headers=None):
        error_type = ERROR_TYPES.get(status, "api_error")
        payload = {
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": "req_test",
        }
        if status == 413:
            # Documented as request_too_large (sent by the API's edge before the
            # request reaches it), a type the SDK's ErrorObject union lacks.
            if set(payload["error"]) != {"type", "message"}:
                self.server.note_error(f"bad 413 error {payload}")
        else:
            self.server.check(sdk.ErrorResponse.model_validate, payload)
        self._json(status, payload, headers)

    def _json(self, status, payload, headers=None):
        data = self._spelled(json.dumps(payload).encode())
        self._raw(status, data, "application/json", headers)


class AnthropicServer(LocalServer):
    def __init__(self, address=("127.0.0.1", 0), min_cacheable_tokens=1024, handler=None):
        super().__init__(address, handler or AnthropicHandler)
        self.usages = []
        self.cache = set()
        self.fingerprints = {}  # answer id -> the request's parts, for cache diagnostics
        self.protocol_errors = []
        self.min_cacheable_tokens = min_cacheable_tokens

    @property
    def base_url(self):
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def bodies(self):
        return [json.loads(r["body"]) for r in self.received if r["path"] == "/v1/messages"]

    def note_error(self, text: str):
        with self.lock:
            self.protocol_errors.append(text)

    def check(self, validate, payload):
        try:
            validate(payload)
        except ValidationError as error:
            self.note_error(f"answer does not parse with the SDK: {error}")

    def diagnose(self, message_id: str, body, usage: dict) -> dict | None:
        """Cache diagnostics as documented: where this request first differs from the named one.

        The request is fingerprinted under its answer's id; the one named by
        ``diagnostics.previous_message_id`` is compared part by part (model,
        system, tools, messages): the first part that is not the same (for
        messages, not a prefix of this request's) is the reason.
        """
        parts = [
            body.get("model"),
            json.dumps(_unmarked(body.get("system"))),
            json.dumps(_unmarked(body.get("tools"))),
            [json.dumps(_unmarked(m)) for m in body.get("messages") or ()],
        ]
        with self.lock:
            self.fingerprints[message_id] = parts
            previous_id = (body.get("diagnostics") or {}).get("previous_message_id")
            previous = self.fingerprints.get(previous_id) if previous_id else None
        if previous_id is None:
            return None
        if previous is None:
            return {"cache_miss_reason": {"type": "previous_message_not_found"}}
        missed = usage["input_tokens"] + usage["cache_creation_input_tokens"]
        for name, before, now in zip(("model", "system", "tools"), previous, parts):
            if before != now:
                return {
                    "cache_miss_reason": {
                        "type": f"{name}_changed",
                        "cache_missed_input_tokens": missed,
                    }
                }
        if previous[3] != parts[3][: len(previous[3])]:
            return {
                "cache_miss_reason": {
                    "type": "messages_changed",
                    "cache_missed_input_tokens": missed,
                }
            }
        return None

    def cache_usage(self, body) -> dict:
        """Read the longest cached prefix; write the prefixes at this request's breakpoints."""
        keys, reach = prefix_keys(body)
        breakpoints = cache_blocks(body)
        with self.lock:
            hit = -1
            for point in breakpoints:
                for j in range(point, max(point - LOOKBACK_BLOCKS, -1), -1):
                    if keys[j] in self.cache:
                        hit = max(hit, j)
                        break
            read = reach[hit] if hit >= 0 else 0
            written = 0
            cacheable = [p for p in breakpoints if reach[p] >= self.min_cacheable_tokens]
            if cacheable and cacheable[-1] > hit:
                written = reach[cacheable[-1]] - read
            self.cache.update(keys[p] for p in cacheable)
            usage = {
                "input_tokens": (reach[-1] if reach else 0) - read - written,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written,
            }
            self.usages.append(usage)
        return dict(usage)
