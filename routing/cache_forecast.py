"""Predicted against billed: what the router expects the provider's prompt cache to do.

Pinch decides by what it believes the cache holds: the previous payload of
the conversation, still warm unless the gap since it is longer than the
model's cache lifetime. Nothing checked that belief, so a cache the router
thinks warm and the provider missed (a model switch, an expired TTL, a
client that changes its system prompt) went unseen. Per decision this
records the estimate (``predicted_split``: cache-read, cache-written and
uncached prompt tokens, in the router's estimate, characters / 3) beside
the provider's reported usage, and names a surprise when they disagree on
the one thing that matters (``surprise``):

* ``miss``: predicted warm (a share of the prompt read from the cache) and
  billed with less than half of that share read: written, or sent uncached;
* ``hit``: predicted cold (nothing read) and billed with cache reads (a
  prefix shared with another conversation, a longer provider lifetime).

Token counts differ between the estimate and the provider's tokenizer, so
the verdict compares shares of the prompt, not counts. Rows whose usage was
estimated, or whose provider reports no cache figures, get no verdict.
"""

from __future__ import annotations

from pinch import estimate_tokens, extract_text
from pinch.steps import CacheModel

MISS = "miss"
HIT = "hit"
SURPRISES = (MISS, HIT)
# A billed read share under this fraction of the predicted one is a miss.
MISS_FRACTION = 0.5


def predicted_split(
    messages,
    prefix,
    tools_tokens: int,
    cache: CacheModel,
    cold: bool | None,
    writes: bool,
    sizes: list[int] | None = None,
) -> tuple[int, int, int] | None:
    """(cache-read, cache-written, uncached) estimated tokens of the payload ``messages``.

    ``prefix``: the prefix probe's (matching leading messages, previous
    length, this length), None when it did not run (then no prediction).
    Warm when the conversation had a previous payload and the gap was within
    the cache's lifetime (``cold`` False or unknown): the matching leading
    messages and the tool definitions are read. ``writes``: the model bills
    cache writes (a cache block); otherwise the rest is plain input. ``sizes``: each
    message's ``estimate_tokens(extract_text(m))``, when the caller has them (pinch.carry).
    """
    if prefix is None:
        return None
    match, previous, _ = prefix
    if sizes is None:
        sizes = [estimate_tokens(extract_text(m)) for m in messages]
    total = tools_tokens + sum(sizes)
    if total < cache.min_cacheable_tokens:
        return 0, 0, total
    read = tools_tokens + sum(sizes[:match]) if previous and not cold else 0
    rest = total - read
    return (read, rest, 0) if writes else (read, 0, rest)


def surprise(
    predicted_read: int | None,
    predicted_total: int,
    billed_read: int | None,
    billed_prompt: int | None,
) -> str:
    """``miss``, ``hit`` or "" (as predicted, or nothing to compare)."""
    if predicted_read is None or billed_read is None or not billed_prompt or not predicted_total:
        return ""
    predicted_share = predicted_read / predicted_total
    billed_share = billed_read / billed_prompt
    if predicted_read > 0 and billed_share < predicted_share * MISS_FRACTION:
        return MISS
    if predicted_read == 0 and billed_read > 0:
        return HIT
    return ""


def forecast_fields(plan) -> dict:
    """The decision's predicted columns, for the model the plan goes to first."""
    model = plan.model
    pinch = plan.pinch
    split = predicted_split(
        plan.send_messages,
        plan.prefix,
        plan.tools_tokens,
        plan.config.cache_prices(model),
        pinch.cold if pinch is not None else None,
        writes=model.cache is not None,
        sizes=plan.payload_tokens,
    )
    read, written, uncached = split if split is not None else (None, None, None)
    return {
        "predicted_cache_read_tokens": read,
        "predicted_cache_write_tokens": written,
        "predicted_uncached_tokens": uncached,
        "cache_cold": pinch.cold if pinch is not None else None,
    }


def verdict_fields(fields: dict, outcome) -> dict:
    """The billed side's verdict and the provider's own reason for a miss, if it gave one."""
    predicted = [
        fields.get(key)
        for key in (
            "predicted_cache_read_tokens",
            "predicted_cache_write_tokens",
            "predicted_uncached_tokens",
        )
    ]
    billed = not outcome.usage_estimated
    verdict = ""
    if billed and None not in predicted:
        verdict = surprise(
            predicted[0], sum(predicted), outcome.cache_read_tokens, outcome.prompt_tokens
        )
    return {
        "cache_surprise": verdict,
        "cache_miss_reason": (outcome.cache_miss_reason or "")[:40],
    }
