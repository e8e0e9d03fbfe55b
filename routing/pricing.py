"""Prompt pricing: the one formula routing ranks candidates by and metrics prices savings with.

Providers discount a cached prompt prefix. With ``r`` the share of prompt
tokens assumed to hit the cache, a prompt token costs the blend
``(1 - r) * prompt_price + r * cached_price``. Pricing everything at the cached
price alone would apply the discount twice and overstate what was saved.
"""

from routing.config import ModelConfig

PER_TOKENS = 1_000_000  # prices are quoted per 1M tokens


def blended_prompt_price(model: ModelConfig, cache_rate: float) -> float:
    """USD per 1M prompt tokens for ``model`` at the assumed cache hit rate."""
    return (1.0 - cache_rate) * model.prompt_price + cache_rate * cached_prompt_price(model)


def cached_prompt_price(model: ModelConfig) -> float:
    """USD per 1M prompt tokens read from the cache (the prompt price when none is set)."""
    if model.cached_prompt_price is not None:
        return model.cached_prompt_price
    return model.prompt_price


def prompt_cost_usd(model: ModelConfig, tokens: int, cache_rate: float) -> float:
    return tokens * blended_prompt_price(model, cache_rate) / PER_TOKENS


def billed_prompt_cost_usd(
    model: ModelConfig, prompt_tokens: int, read_tokens: int | None, write_tokens: int | None
) -> float:
    """What a prompt cost as the provider billed it: cache reads, cache writes, the rest.

    ``prompt_tokens`` includes the cache reads and writes (chat-completions
    usage). Reads are priced at ``cached_prompt_price``; writes at the prompt
    price times the model's cache write multiplier (1.25 for a 5-minute
    cache, 2 for an hour; 1 for a model without a cache block).
    """
    read, written = read_tokens or 0, write_tokens or 0
    write_price = model.prompt_price * (model.cache.write_multiplier if model.cache else 1.0)
    uncached = max(prompt_tokens - read - written, 0)
    return (
        uncached * model.prompt_price + read * cached_prompt_price(model) + written * write_price
    ) / PER_TOKENS
