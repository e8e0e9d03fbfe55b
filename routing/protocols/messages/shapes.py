"""The Messages API's shapes that both directions of its translation share.

Stop reasons and finish reasons, usage (cache reads and writes counted in
``prompt_tokens``, as chat-completions clients expect of a prompt, and named
apart in ``prompt_tokens_details``: ``cached_tokens``, ``cache_write_tokens``,
the fields OpenAI uses for the same figures), thinking blocks (kept whole,
signature included: the API wants them back on the assistant turn before a
tool result), and a Messages request with where each chat message landed.
The inbound adapter (client to chat) and the Anthropic provider (chat to
upstream, and back) read them here.
"""

from dataclasses import dataclass, field


@dataclass
class MessagesRequest:
    body: dict
    # For each chat message: ("system", i) or ("messages", turn, block) of
    # its last block, or None when it produced no block.
    block_of: list = field(default_factory=list)


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


def _count(usage: dict, name: str) -> int:
    # A figure that is no count (a string, an object) adds nothing rather than crash the answer.
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def chat_usage(usage: dict, diagnostics=None) -> dict:
    """Anthropic usage -> chat-completions usage (cache figures included in prompt_tokens).

    ``diagnostics``: the Message's cache diagnostics, when the client asked for
    them; the reason for a miss rides along as ``cache_miss_reason``.
    """
    usage = usage if isinstance(usage, dict) else {}
    uncached = _count(usage, "input_tokens")
    read = _count(usage, "cache_read_input_tokens")
    written = _count(usage, "cache_creation_input_tokens")
    prompt = uncached + read + written
    completion = _count(usage, "output_tokens")
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


def blocks_of(content) -> list:
    """A turn's or a system prompt's content as blocks: a string is one text block, as the
    API documents it."""
    return [{"type": "text", "text": content}] if isinstance(content, str) else content
