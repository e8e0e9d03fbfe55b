"""An Anthropic Message as a chat completion.

Text blocks become ``content``, ``tool_use`` blocks ``tool_calls`` with
their ids kept (the client sends them back as ``tool_call_id`` and the
request translation maps them to ``tool_use_id``), thinking becomes
``reasoning_content``, and the thinking blocks themselves, signature
included, ride along as ``thinking_blocks``: the API wants them back on the
assistant turn before a tool result, and a client that sends the message
back as it got it does so. Usage counts cache reads and writes in
``prompt_tokens``, as chat-completions clients expect of a prompt, and
names them apart in ``prompt_tokens_details`` (``cached_tokens``,
``cache_write_tokens``, the fields OpenAI uses for the same figures).
"""

from __future__ import annotations

import json
import time

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def finish_reason(stop_reason) -> str | None:
    if stop_reason is None:
        return None
    return FINISH_REASONS.get(stop_reason, "stop")


def chat_usage(usage: dict, diagnostics=None) -> dict:
    """Anthropic usage -> chat-completions usage (cache figures included in prompt_tokens).

    ``diagnostics``: the Message's cache diagnostics, when the client asked for
    them; the reason for a miss rides along as ``cache_miss_reason``.
    """
    uncached = usage.get("input_tokens") or 0
    read = usage.get("cache_read_input_tokens") or 0
    written = usage.get("cache_creation_input_tokens") or 0
    prompt = uncached + read + written
    completion = usage.get("output_tokens") or 0
    details = {"cached_tokens": read, "cache_write_tokens": written}
    reason = cache_miss_reason(diagnostics)
    if reason:
        details["cache_miss_reason"] = reason
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": details,
        # Anthropic's own names too, for clients that know them.
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
    }


def cache_miss_reason(diagnostics) -> str | None:
    """The ``type`` of a Message's ``diagnostics.cache_miss_reason`` (Anthropic's cache
    diagnostics: model_changed, system_changed, tools_changed, messages_changed,
    previous_message_not_found, unavailable), or None."""
    reason = diagnostics.get("cache_miss_reason") if isinstance(diagnostics, dict) else None
    kind = reason.get("type") if isinstance(reason, dict) else None
    return kind if isinstance(kind, str) and kind else None


# Block type -> the keys that make it up (redacted thinking is opaque data).
THINKING_BLOCKS = {
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
}


def thinking_block(block: dict) -> dict:
    """A thinking block as the API wants it back: its own keys, nothing else."""
    return {key: block.get(key) or "" for key in THINKING_BLOCKS[block["type"]]}


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
        completion["usage"] = chat_usage(message["usage"], message.get("diagnostics"))
    return completion
