"""Pinch at the request edge: relevance order (may be None), then the pure prune.

Called exactly once per request, before the measured-context decision, so the
pruned list is what is measured and what is sent. With pinch off this returns
the caller's own list, and the payload goes upstream exactly as received.
"""

from dataclasses import dataclass, field

from django.conf import settings

from pinch import estimate_tokens, extract_text, next_step_start, prune_context
from pinch.relevance import relevance_for
from routing.config import PinchConfig
from routing.models import tokens_saved


@dataclass(frozen=True)
class PinchOutcome:
    original_tokens: int
    final_tokens: int
    summarized: int
    compressed: list = field(default_factory=list)
    capped: list = field(default_factory=list)
    compressed_tools: dict = field(default_factory=dict)
    relevance_used: bool = False
    relevance_fallback: bool = False

    @property
    def tokens_saved(self) -> int:
        return tokens_saved(self.original_tokens, self.final_tokens)


def pinch_messages(messages, pinch_config: PinchConfig, extra_fixed_tokens: int):
    """(messages to send, PinchOutcome or None when pinch is off)."""
    if not pinch_config.enabled:
        return messages, None
    relevance = relevance_for(
        messages,
        pinch_config,
        budget_tokens=pinch_config.budget_tokens,
        extra_fixed_tokens=extra_fixed_tokens,
        redis_url=settings.REDIS_URL,
    )
    pruned, stats = prune_context(
        messages,
        budget_tokens=pinch_config.budget_tokens,
        keep_last_turns=pinch_config.keep_last_turns,
        max_summarize_chars=pinch_config.max_summarize_chars,
        protected_max_chars=pinch_config.protected_max_chars,
        relevance_order=relevance.order,
        extra_fixed_tokens=extra_fixed_tokens,
        keep_last_tool_results=pinch_config.keep_last_tool_results,
        window_step=pinch_config.window_step,
    )
    outcome = PinchOutcome(
        original_tokens=stats["original_tokens"],
        final_tokens=stats["final_tokens"],
        summarized=stats.get("summarized", 0),
        compressed=stats.get("compressed", []),
        capped=stats.get("capped", []),
        compressed_tools=stats.get("compressed_tools", {}),
        relevance_used=relevance.status == "used",
        relevance_fallback=relevance.status == "unavailable",
    )
    return pruned, outcome


def stable_prefixes(
    messages, pinch_config: PinchConfig, outcome: PinchOutcome | None, extra_fixed_tokens: int
) -> tuple[int, int]:
    """Leading messages the next prune step leaves as they are sent: (this turn's, the last turn's).

    All of them with pinch off. A provider that caches only at explicit
    breakpoints (Anthropic) writes at the end of this turn's stable prefix for
    the next turn to read, and reads where the last turn wrote: the request
    that ended before the model's latest answer (an agent appends the answer
    and what it asked for). When pinch takes a step the two differ, and the
    old one may be further back than the provider looks for it (Anthropic:
    20 blocks), so both are worth a breakpoint.
    """
    if outcome is None:
        return len(messages), len(messages)
    now = _stable_prefix(messages, pinch_config, outcome.original_tokens, outcome)
    answers = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if not answers:
        return now, now
    before = messages[: answers[-1]]
    tokens = sum(estimate_tokens(extract_text(m)) for m in before) + extra_fixed_tokens
    return now, min(now, _stable_prefix(before, pinch_config, tokens, outcome))


def _stable_prefix(messages, pinch_config: PinchConfig, tokens: int, outcome: PinchOutcome) -> int:
    # Over budget and pruned uniformly, every candidate already has its final form.
    settled = tokens > pinch_config.budget_tokens and not outcome.relevance_used
    return next_step_start(
        messages,
        keep_last_turns=pinch_config.keep_last_turns,
        keep_last_tool_results=pinch_config.keep_last_tool_results,
        window_step=pinch_config.window_step,
        settled=settled,
    )
