"""pinch: trim old tool results so a long agent conversation fits a token budget.

This package root re-exports only the pure core, so importing ``pinch`` never
pulls in Django, HTTP clients or settings. The relevance edge (embedders, the
fail-closed call) lives in its own modules and is imported by full name where
the request pipeline needs it.
"""

from pinch.core import next_step_start, prune_context, trim_candidates
from pinch.ranking import order_by_relevance
from pinch.tokens import (
    CHARS_PER_TOKEN,
    estimate_tokens,
    extract_text,
    last_user_text,
    message_tokens,
    value_tokens,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "estimate_tokens",
    "extract_text",
    "last_user_text",
    "message_tokens",
    "next_step_start",
    "order_by_relevance",
    "prune_context",
    "trim_candidates",
    "value_tokens",
]
