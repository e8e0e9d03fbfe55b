"""How the test upstreams play a ``script-*`` model: one step per tool result, and compaction.

Shared by the chat-completions and Responses sides of the OpenAI test
upstream, so an agent (Codex CLI) meets the same script on both.
"""

import json

from tests.support.compaction import SUMMARY, after_compaction, is_compaction


def script_step(server, messages: list, result_kind: str) -> dict:
    """The script's step for a conversation: by the tool results in it (``result_kind``
    messages or items), ``server.after_compaction``'s once it went on from a summary,
    the summary itself for a compaction request (tests/support/compaction.py)."""
    if is_compaction(messages):
        return {"text": SUMMARY}
    script = server.after_compaction if after_compaction(messages) else server.script
    done = sum(1 for m in messages if m.get("role") == result_kind or m.get("type") == result_kind)
    return script[min(done, len(script) - 1)]


def usage_of(body) -> dict:
    """Usage: fixed for most models; a script model's prompt is its body's size (4 chars a
    token), so an agent that compacts past a token limit sees its context grow."""
    prompt = len(json.dumps(body)) // 4 if body.get("model", "").startswith("script") else 11
    return {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7}
