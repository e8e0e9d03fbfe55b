"""Picking the model for a routed request.

The cheapest model of the tier (blended prompt price, see routing.pricing)
whose context window holds the measured prompt plus the requested completion;
if none of the tier fits, the next tier up. The rest of that ordered list is
the fallback chain when the chosen model's provider fails.
"""

import json
from itertools import compress, count
from operator import not_

from pinch import CHARS_PER_TOKEN, estimate_tokens, extract_text, message_tokens
from routing.config import ModelConfig, RouterConfig
from routing.errors import RouterError
from routing.pricing import blended_prompt_price


def tools_overhead_tokens(tools) -> int:
    """Tool definitions ride along on every call and fill the same window."""
    return tools_chars(tools) // CHARS_PER_TOKEN


def tools_chars(tools) -> int:
    """The tool definitions' characters as JSON: what ``tools_overhead_tokens`` counts."""
    return len(json.dumps(tools)) if tools else 0


# What a chat API adds around the text, as OpenAI documents for its chat models:
# a few tokens of role and separators per message, and the primed reply.
MESSAGE_OVERHEAD_TOKENS = 3
REPLY_PRIMING_TOKENS = 3


def estimated_tokens(messages, tools) -> int:
    """pinch's estimate (characters / 3, the core's contract) plus the tool definitions."""
    return sum(estimate_tokens(extract_text(m)) for m in messages) + tools_overhead_tokens(tools)


def measure_prompt_tokens(messages, tools, sizes=None, tools_tokens: int | None = None) -> int:
    """The prompt the router fits into a context window and prices.

    Every part of each message at three characters a token (``pinch.message_tokens``:
    text, tool calls' arguments, images' data URLs, thinking...), a non-empty
    message at least one token (``"hi"`` is 0 by characters / 3), and the API's
    overhead per message. The window, the price, the budget's estimate and the
    key's tpm all read this one figure. The pinch core keeps its plain text
    characters / 3 for its budget, so pinch's figures stay comparable across versions.
    ``sizes``: each message's ``message_tokens`` when the caller has them
    (pinch.carry.MessageFacts, carried from the conversation's previous request).
    ``tools_tokens``: ``tools_overhead_tokens(tools)`` when the caller has it (an agent's
    tool definitions are tens of KB of JSON, written out each time they are counted).
    """
    if sizes is None:
        sizes = [message_tokens(message) for message in messages]
    if tools_tokens is None:
        tools_tokens = tools_overhead_tokens(tools)
    total = REPLY_PRIMING_TOKENS + tools_tokens
    total += MESSAGE_OVERHEAD_TOKENS * len(sizes) + sum(sizes)
    # ``_with_overhead`` of each message, summed in C: only those measured 0 are read again.
    for i in compress(count(), map(not_, sizes)):
        total += _with_overhead(messages[i], 0) - MESSAGE_OVERHEAD_TOKENS
    return total


def remeasured(measured: int, before, after, sizes=None, sent=None) -> int | None:
    """``measure_prompt_tokens`` of ``after``, given ``measured``, that of ``before`` (the same
    tools): only the messages that are not the very objects of ``before`` at their place
    are measured (pinch and local vision change a few and remove none), so the figure of a
    pruned payload costs what pinch changed, not the conversation's length. None when the
    two are not as long. ``sizes``: those ``measured`` was summed from, when the caller
    has them; then the messages replaced are not read again either. ``sent``: the facts
    of ``after`` (pinch.carry.SentFacts, ``before``'s facts' ``sent``), which carry the
    sizes of the messages pinch rewrote the same way in the previous payload."""
    if len(before) != len(after):
        return None
    if sent is not None:
        changed, now = sent.changed, sent.sizes
    else:
        changed = [i for i, (old, new) in enumerate(zip(before, after)) if old is not new]
        now = None
    for i in changed:
        old, new = before[i], after[i]
        was = _measure(old) if sizes is None else _with_overhead(old, sizes[i])
        measured += (_measure(new) if now is None else _with_overhead(new, now[i])) - was
    return measured


def _measure(message) -> int:
    return _with_overhead(message, message_tokens(message))


def _with_overhead(message, tokens: int) -> int:
    if not tokens and extract_text(message):
        tokens = 1  # "hi" is 0 by characters / 3, but it is not nothing
    return MESSAGE_OVERHEAD_TOKENS + tokens


def candidates_for(
    config: RouterConfig, tier: str, measured_tokens: int, max_tokens: int, needed: set[str]
) -> list[ModelConfig]:
    """Models to try in order: the tier's fitting models by price, then the tiers above."""
    tiers = config.routing.tiers
    rate = config.objective.assumed_cache_rate
    needed_window = measured_tokens + max_tokens
    ordered = []
    for tier_name in tiers[tiers.index(tier) :]:
        fitting = [
            m
            for m in config.models
            if m.routable
            and m.tier == tier_name
            and m.context_window >= needed_window
            and needed.issubset(m.capabilities)
        ]
        fitting.sort(key=lambda m: blended_prompt_price(m, rate))
        ordered.extend(fitting)
    if ordered:
        return ordered
    if not any(m.routable for m in config.models):
        raise RouterError(
            400,
            f"No configured model may be chosen for {config.routing.auto_model!r} (every model "
            "has routable: false); name a model in the request.",
            "no_routable_model",
        )
    if not any(needed.issubset(m.capabilities) for m in config.models):
        raise RouterError(
            422,
            f"No configured model supports what this request needs ({', '.join(sorted(needed))}).",
            "capability_unavailable",
        )
    asked = f"The request measures {measured_tokens} prompt tokens plus {max_tokens} for the answer"
    reachable = [m for m in config.models if m.routable and m.tier in tiers[tiers.index(tier) :]]
    if not reachable:
        raise RouterError(
            400,
            f"{asked}, classified {tier!r}; the router's config has no routable model of tier "
            f"{tier!r} or above. Add one (models: tier: {tiers[-1]}).",
            "no_model_for_tier",
        )
    largest = max(reachable, key=lambda m: m.context_window)
    raise RouterError(
        400,
        f"{asked}; no configured model of tier {tier!r} or above has a context window that "
        f"large (the largest: {largest.id!r}, {largest.context_window} tokens). Add a model "
        "with a larger context_window to the router's config, or ask for a shorter answer "
        "(max_tokens).",
        "context_length_exceeded",
    )


def baseline_model(config: RouterConfig, path: str, chosen: ModelConfig, measured_tokens, request):
    """The model routing's saving on a request is counted against (metrics.savings).

    A pinned request's own model (routing chose nothing); a routed one's
    ``routing.baseline_model``, else the dearest model it could have used:
    routable, with the capabilities it needs and a window that holds it.
    """
    if path != "routed":
        return chosen
    if config.routing.baseline_model is not None:
        return config.model(config.routing.baseline_model)
    rate = config.objective.assumed_cache_rate
    window = measured_tokens + request.max_tokens
    # Once, not per model: finding images walks every message.
    needed = request.needed_capabilities
    usable = [
        m
        for m in config.models
        if m.routable and m.context_window >= window and needed.issubset(m.capabilities)
    ]
    return max(
        usable or [chosen], key=lambda m: (blended_prompt_price(m, rate), m.completion_price)
    )
