"""The Responses API's shapes both directions share: the ids it names things by, its usage,
its input items.

The native path (``native``: usage read off an upstream's own response) and
the translated one (``reply``: a chat completion's usage written as a
response's) both convert usage, and both name responses by the router's own
ids; the parse (``inbound``) and the native body read a request's items the
same way. They read them here, so the native path imports no translator.
"""

import os


def new_id(prefix: str) -> str:
    """``f"{prefix}_{uuid.uuid4().hex}"``: a random (version 4) UUID's hex, in a quarter of the
    time (1 us, not 4: uuid.UUID's constructor checks what 16 random bytes need not)."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40  # the version, 4
    raw[8] = raw[8] & 0x3F | 0x80  # the variant, RFC 4122
    return f"{prefix}_{raw.hex()}"


def _count(value) -> int:
    """A usage figure the Responses shape can carry: a count, else 0 (it has no "unknown").

    Chat upstreams have sent null, strings, floats and objects where a count belongs.
    """
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _details(usage: dict, name: str) -> dict:
    details = usage.get(name)
    return details if isinstance(details, dict) else {}


def responses_usage(usage) -> dict:
    """Chat-completions usage -> Responses usage."""
    usage = usage if isinstance(usage, dict) else {}
    prompt = _count(usage.get("prompt_tokens"))
    completion = _count(usage.get("completion_tokens"))
    cached = _count(_details(usage, "prompt_tokens_details").get("cached_tokens"))
    reasoning = _count(_details(usage, "completion_tokens_details").get("reasoning_tokens"))
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": _count(usage.get("total_tokens")) or prompt + completion,
    }


def chat_usage(usage) -> dict | None:
    """Responses usage -> chat-completions usage (what a decision records)."""
    if not isinstance(usage, dict):
        return None
    details = usage.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return {
        "prompt_tokens": usage.get("input_tokens"),
        "completion_tokens": usage.get("output_tokens"),
        "prompt_tokens_details": {"cached_tokens": cached},
    }


# The parts of an item's content that carry its text.
TEXT_PARTS = ("input_text", "output_text", "text", "refusal")


def input_items(body) -> list:
    """The request's ``input`` as a list of items (a string is one user message)."""
    value = body.get("input")
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return list(value or [])
