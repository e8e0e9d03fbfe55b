"""An Anthropic Message as a chat completion.

Text blocks become ``content``, ``tool_use`` blocks ``tool_calls`` with
their ids kept (the client sends them back as ``tool_call_id`` and the
request translation maps them to ``tool_use_id``), thinking becomes
``reasoning_content``, and the thinking blocks themselves ride along as
``thinking_blocks``, so a client that sends the message back as it got it
gives Claude its signed thinking again. Usage as chat usage
(routing.protocols.messages.shapes).
"""

import json
import time

from routing.protocols.messages.shapes import (
    THINKING_BLOCKS,
    chat_usage,
    finish_reason,
    thinking_block,
)


def tool_call(block: dict, arguments: str) -> dict:
    return {
        "id": block.get("id"),
        "type": "function",
        "function": {"name": block.get("name"), "arguments": arguments},
    }


def to_chat_completion(message: dict) -> dict:
    texts, thinking, calls, kept = [], [], [], []
    for block in message.get("content") or ():
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind in THINKING_BLOCKS:
            thinking.append(block.get("thinking") or "")
            kept.append(thinking_block(block))
        elif kind == "tool_use":
            calls.append(tool_call(block, json.dumps(block.get("input") or {})))
    answer: dict = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        answer["tool_calls"] = calls
    if any(thinking):
        answer["reasoning_content"] = "".join(thinking)
    if kept:
        answer["thinking_blocks"] = kept
    completion = {
        "id": message.get("id"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": message.get("model"),
        "choices": [
            {
                "index": 0,
                "message": answer,
                "finish_reason": finish_reason(message.get("stop_reason")) or "stop",
            }
        ],
    }
    if isinstance(message.get("usage"), dict):
        completion["usage"] = chat_usage(message["usage"])
    return completion
