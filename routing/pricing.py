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
    cached_price = (
        model.cached_prompt_price if model.cached_prompt_price is not None else model.prompt_price
    )
    return (1.0 - cache_rate) * model.prompt_price + cache_rate * cached_price


def prompt_cost_usd(model: ModelConfig, tokens: int, cache_rate: float) -> float:
    return tokens * blended_prompt_price(model, cache_rate) / PER_TOKENS
