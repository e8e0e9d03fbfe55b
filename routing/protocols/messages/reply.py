"""A chat-completions answer as an Anthropic Message, plain and streamed.

The inverse of the Anthropic provider's translation (routing.providers.anthropic),
for a Messages client (Claude Code) whose request went to an OpenAI-compatible
upstream.
``content`` becomes a text block, ``tool_calls`` ``tool_use`` blocks with
their ids kept (the client answers them with ``tool_use_id``, which the
inbound translation turns back into ``tool_call_id``), the finish reason a
stop reason, and usage splits the chat prompt back into uncached input,
cache reads and cache writes, as ``shapes.chat_usage`` joined them.

``MessageEvents`` turns a chunk stream into the Messages event stream as it
arrives: ``message_start`` on the first chunk, a text block opened on the
first text, a ``tool_use`` block per tool call with its argument JSON as
``input_json_delta`` pieces, and, once the upstream's ``[DONE]`` says usage
is known, the blocks' stops, ``message_delta`` and ``message_stop``.
"""

from __future__ import annotations

import json
import uuid

from routing.protocols.chunks import ChunkEvents
from routing.protocols.messages.shapes import FINISH_REASONS

# chat finish_reason -> the stop reason that FINISH_REASONS maps to it (first of each).
STOP_REASONS: dict[str, str] = {}
for _stop, _finish in FINISH_REASONS.items():
    STOP_REASONS.setdefault(_finish, _stop)


def stop_reason(finish) -> str:
    return STOP_REASONS.get(finish, "end_turn")


def message_id() -> str:
    return f"msg_{uuid.uuid4().hex[:24]}"


def _count(value) -> int:
    # An upstream's figure, or 0 for anything that is not a count.
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def messages_usage(usage) -> dict:
    """Chat-completions usage -> Anthropic usage (prompt split into uncached, read, written)."""
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    read = _count(details.get("cached_tokens"))
    written = _count(details.get("cache_write_tokens"))
    return {
        "input_tokens": max(_count(usage.get("prompt_tokens")) - read - written, 0),
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
        "output_tokens": _count(usage.get("completion_tokens")),
    }


def _tool_input(arguments) -> dict:
    try:
        value = json.loads(arguments) if isinstance(arguments, str) and arguments else {}
    except ValueError:
        # A model that wrote broken JSON: the client sees what it wrote.
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"value": value}


def to_message(completion: dict, model_name: str) -> dict:
    """A chat completion (provider-checked) as a Message answering for ``model_name``."""
    choice = (completion.get("choices") or [{}])[0]
    choice = choice if isinstance(choice, dict) else {}
    answer = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    content = []
    if isinstance(answer.get("content"), str) and answer["content"]:
        content.append({"type": "text", "text": answer["content"]})
    calls = answer.get("tool_calls") if isinstance(answer.get("tool_calls"), list) else []
    for call in calls:
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        content.append(
            {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{uuid.uuid4().hex[:24]}",
                "name": function.get("name"),
                "input": _tool_input(function.get("arguments")),
            }
        )
    return {
        "id": message_id(),
        "type": "message",
        "role": "assistant",
        "model": model_name,
        "content": content,
        "stop_reason": stop_reason(choice.get("finish_reason")),
        "stop_sequence": None,
        "usage": messages_usage(completion.get("usage")),
    }


class MessageEvents(ChunkEvents):
    """Feed chat-completions chunks in order; get the Messages events each one makes.

    One block is open at a time, as Anthropic streams them: a new tool call
    or text after a tool call closes the block before it.
    """

    def __init__(self, model_name: str):
        super().__init__()
        self.model_name = model_name
        self.blocks = 0  # content blocks opened so far
        self.open: int | None = None  # index of the open block
        self.open_is_text = False
        self.tools: dict[int, int] = {}  # chat tool call index -> block index

    def opening(self) -> list[dict]:
        return [self._message_start()]

    def end(self) -> list[dict]:
        """The closing events, once the upstream's stream is complete."""
        events = self.start() + self._close()
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason(self.finish), "stop_sequence": None},
                "usage": messages_usage(self.usage),
            }
        )
        events.append({"type": "message_stop"})
        return events

    def _message_start(self) -> dict:
        return {
            "type": "message_start",
            "message": {
                "id": message_id(),
                "type": "message",
                "role": "assistant",
                "model": self.model_name,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
        }

    def _close(self) -> list[dict]:
        if self.open is None:
            return []
        closed, self.open = self.open, None
        return [{"type": "content_block_stop", "index": closed}]

    def _start(self, block: dict, is_text: bool) -> list[dict]:
        events = self._close()
        self.open, self.open_is_text = self.blocks, is_text
        self.blocks += 1
        events.append({"type": "content_block_start", "index": self.open, "content_block": block})
        return events

    def text(self, text: str) -> list[dict]:
        events = []
        if self.open is None or not self.open_is_text:
            events = self._start({"type": "text", "text": ""}, is_text=True)
        delta = {"type": "text_delta", "text": text}
        events.append({"type": "content_block_delta", "index": self.open, "delta": delta})
        return events

    def tool(self, call: dict) -> list[dict]:
        events = []
        index = call.get("index", 0)
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        if index not in self.tools:
            block = {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{uuid.uuid4().hex[:24]}",
                "name": function.get("name"),
                "input": {},
            }
            events = self._start(block, is_text=False)
            self.tools[index] = self.open
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            delta = {"type": "input_json_delta", "partial_json": arguments}
            events.append(
                {"type": "content_block_delta", "index": self.tools[index], "delta": delta}
            )
        return events
