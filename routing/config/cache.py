"""What a model's prompt cache costs and how long it lasts: the prices pinch's rule decides by.

From the model's config, with defaults per provider kind where it says
nothing (their sources: docs/pinch.md, "Cache prices" and "Cold steps").
"""

from __future__ import annotations

from dataclasses import dataclass

from pinch.steps import CacheModel


@dataclass(frozen=True)
class KindCache:
    """How a provider kind's prompt cache works where a model's config says nothing."""

    read_multiplier: float
    # Seconds a prefix is kept after its last use (sources: docs/pinch.md, "Cold steps").
    lifetime_seconds: int
    # Caches any repeated prefix by itself; False: only at the breakpoints the router marks.
    automatic: bool


# Anthropic keeps a prefix 5 minutes (an hour with a 1h cache block) and caches only at
# marked breakpoints; OpenAI keeps one "5 to 10 minutes of inactivity", the upper end.
KIND_CACHE = {
    "openai": KindCache(read_multiplier=0.5, lifetime_seconds=600, automatic=True),
    "anthropic": KindCache(read_multiplier=0.1, lifetime_seconds=300, automatic=False),
    "demo": KindCache(read_multiplier=1.0, lifetime_seconds=300, automatic=True),
}
DEFAULT_MIN_CACHED_TOKENS = 1024
TTL_SECONDS = {"5m": 300, "1h": 3600}


def cache_model(model, defaults: KindCache) -> CacheModel:
    """How ``model``'s (a ModelConfig) prompt cache bills, as pinch's rule prices its steps.

    The same prices the billed cost uses (routing.pricing): reads at
    ``cached_prompt_price`` over ``prompt_price``, writes at the cache
    block's multiplier (1.25 for a 5-minute cache, 2 for an hour; 1 without
    a block), ``cache.min_tokens`` as the shortest cached prompt. Without a
    cached price, the provider kind's read default (docs/pinch.md, "Cache
    prices"). Anthropic caches only at the breakpoints the router marks.

    The lifetime: ``cache_lifetime_seconds``, else the cache block's ttl, else
    the provider kind's default.
    """
    if model.cached_prompt_price is not None and model.prompt_price > 0:
        read = min(model.cached_prompt_price / model.prompt_price, 1.0)
    else:
        read = defaults.read_multiplier
    lifetime = defaults.lifetime_seconds
    if model.cache is not None:
        write, minimum = model.cache.write_multiplier, model.cache.min_tokens
        lifetime = TTL_SECONDS[model.cache.ttl]
    else:
        write, minimum = 1.0, DEFAULT_MIN_CACHED_TOKENS
    return CacheModel(
        read_multiplier=read,
        write_multiplier=write,
        min_cacheable_tokens=minimum,
        lifetime_seconds=model.cache_lifetime_seconds or lifetime,
        automatic=defaults.automatic,
    )
