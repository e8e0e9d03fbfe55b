"""Anthropic's event stream as chat-completions chunks, one event at a time.

The Messages stream is ``message_start``, then per content block a
``content_block_start``, its deltas and a ``content_block_stop``, then
``message_delta`` (stop reason, output usage) and ``message_stop``; ``ping``
may come at any point and an ``error`` event may end it early. Each event is
translated as it arrives (nothing is held back), into what an OpenAI stream
would have sent at that point: the role first, text and reasoning deltas,
tool calls announced with their id and name and then fed their argument
JSON in pieces under their ``index`` (counted over tool blocks only, as
chat clients number them), the finish reason, and the usage chunk. A
thinking block, once complete with its signature, also goes out whole as
``thinking_blocks`` (see routing.protocols.messages.shapes).
"""

from __future__ import annotations

import time

from routing.protocols.base import DONE, Event
from routing.protocols.messages.shapes import (
    THINKING_BLOCKS,
    chat_usage,
    finish_reason,
    thinking_block,
)
from routing.providers.anthropic.errors import StreamError
from routing.providers.anthropic.response import tool_call


class ChunkTranslator:
    """Feed Anthropic events in order; get the chat-completions chunks each one makes."""

    def __init__(self, include_usage: bool):
        self.include_usage = include_usage
        self.id = None
        self.model = None
        self.created = int(time.time())
        self.usage: dict = {}
        self.tool_index: dict[int, int] = {}  # content block index -> tool call index
        self.thinking: dict[int, dict] = {}  # content block index -> the block, as it grows
        self.finished = False

    def feed(self, event: dict) -> list[dict]:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self.id, self.model = message.get("id"), message.get("model")
            self.usage.update(message.get("usage") or {})
            return [self._chunk({"role": "assistant", "content": ""})]
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                index = self.tool_index[event.get("index")] = len(self.tool_index)
                call = tool_call(block, "")
                return [self._chunk({"tool_calls": [{"index": index, **call}]})]
            if block.get("type") == "text" and block.get("text"):
                return [self._chunk({"content": block["text"]})]
            if block.get("type") in THINKING_BLOCKS:
                self.thinking[event.get("index")] = thinking_block(block)
            return []
        if kind == "content_block_stop":
            # A finished thinking block, signature and all, for the client to send back.
            block = self.thinking.pop(event.get("index"), None)
            return [self._chunk({"thinking_blocks": [block]})] if block else []
        if kind == "content_block_delta":
            return self._delta(event.get("index"), event.get("delta") or {})
        if kind == "message_delta":
            self.usage.update(
                {k: v for k, v in (event.get("usage") or {}).items() if v is not None}
            )
            reason = finish_reason((event.get("delta") or {}).get("stop_reason"))
            if reason is None:
                return []
            return [self._chunk({}, reason)]
        if kind == "message_stop":
            self.finished = True
            if not self.include_usage:
                return []
            return [
                {
                    "id": self.id,
                    "object": "chat.completion.chunk",
                    "created": self.created,
                    "model": self.model,
                    "choices": [],
                    "usage": chat_usage(self.usage),
                }
            ]
        if kind == "error":
            error = event.get("error") or {}
            raise StreamError(str(error.get("type") or "api_error"), str(error.get("message")))
        return []  # ping, and event types added later

    def _delta(self, index, delta: dict) -> list[dict]:
        kind = delta.get("type")
        if kind == "text_delta":
            return [self._chunk({"content": delta.get("text") or ""})]
        if kind == "thinking_delta":
            if index in self.thinking:
                self.thinking[index]["thinking"] += delta.get("thinking") or ""
            return [self._chunk({"reasoning_content": delta.get("thinking") or ""})]
        if kind == "signature_delta" and index in self.thinking:
            self.thinking[index]["signature"] += delta.get("signature") or ""
            return []
        if kind == "input_json_delta" and index in self.tool_index:
            piece = {
                "index": self.tool_index[index],
                "function": {"arguments": delta.get("partial_json") or ""},
            }
            return [self._chunk({"tool_calls": [piece]})]
        return []  # citations_delta, and delta types added later

    def _chunk(self, delta: dict, finish: str | None = None) -> dict:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }


def chat_chunks(events, include_usage: bool):
    """Anthropic's events (parsed ``Event``s) -> chat-completions chunk events, ending in [DONE].

    Raises StreamError on an ``error`` event; a stream that ends without
    ``message_stop`` ends without [DONE], as a broken upstream stream would.
    The chunks are serialised only when they are sent (``Event.sse``).
    """
    translator = ChunkTranslator(include_usage)
    for event in events:
        if event.data is None:
            continue
        for chunk in translator.feed(event.data):
            yield Event.of(chunk)
        if translator.finished:
            yield DONE
            return
