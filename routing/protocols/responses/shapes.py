"""The Responses API's shapes both directions share: the ids it names things by, its usage.

The native path (``native``: usage read off an upstream's own response) and
the translated one (``reply``: a chat completion's usage written as a
response's) both convert usage, and both name responses by the router's own
ids; they read them here, so the native path imports no translator.
"""

import uuid


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def responses_usage(usage) -> dict:
    """Chat-completions usage -> Responses usage."""
    usage = usage if isinstance(usage, dict) else {}
    prompt = usage.get("prompt_tokens") or 0
    completion = usage.get("completion_tokens") or 0
    prompt_details = usage.get("prompt_tokens_details")
    completion_details = usage.get("completion_tokens_details")
    cached = (prompt_details or {}).get("cached_tokens") if isinstance(prompt_details, dict) else 0
    reasoning = (
        (completion_details or {}).get("reasoning_tokens")
        if isinstance(completion_details, dict)
        else 0
    )
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached or 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning or 0},
        "total_tokens": usage.get("total_tokens") or prompt + completion,
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
