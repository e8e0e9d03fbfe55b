"""The price models of the replay: how a replayed request's prompt is billed under a cache.

``CONFIGURED`` (the default): each request at the configured prices of the
model it went to (``prompt_price``, ``cached_prompt_price``, the cache
block's write premium), as the live router bills and records it, so the
replay and a live session on the same config agree. A ``CachePrices``: every
model billed at one price and two multipliers (reads of the prefix the
session's previous request shared, writes of the rest), to ask what pinch
would do under another provider's cache; the replay then runs with every
model so billed (``priced_config``), since pinch decides by those prices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from routing.config import RouterConfig
from routing.config.schema import ModelCacheConfig
from routing.pricing import cached_prompt_price
from routing.selection import tools_overhead_tokens


class ReplayError(ValueError):
    """The replay cannot start (bad path, bad file, bad setting); the message says why."""


@dataclass(frozen=True)
class ConfiguredPrices:
    """Each request billed at its own model's configured prices (the sentinel ``CONFIGURED``)."""

    label: str = "(config)"


CONFIGURED = ConfiguredPrices()


@dataclass(frozen=True)
class CachePrices:
    """A prompt priced under a prefix cache: multipliers of ``price_per_1m`` (USD per 1M tokens)."""

    price_per_1m: float = 3.0
    read_multiplier: float = 0.1
    write_multiplier: float = 1.25

    def __post_init__(self) -> None:
        for name, option in (
            ("price_per_1m", "--price-per-1m"),
            ("read_multiplier", "--cache-read-multiplier"),
            ("write_multiplier", "--cache-write-multiplier"),
        ):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ReplayError(f"{option}: must be a number >= 0, not {value!r}")

    def cost(self, cached_tokens: int, uncached_tokens: int) -> float:
        """Dollars for a prompt of ``cached_tokens`` read from cache and the rest written."""
        weighted = cached_tokens * self.read_multiplier + uncached_tokens * self.write_multiplier
        return weighted * self.price_per_1m / 1_000_000

    @property
    def label(self) -> str:
        return f"({self.read_multiplier:g}, {self.write_multiplier:g})"


# Anthropic and OpenAI from GPT-5.6; the same without a write premium; older OpenAI.
PRICE_MODELS = (
    CachePrices(read_multiplier=0.1, write_multiplier=1.25),
    CachePrices(read_multiplier=0.1, write_multiplier=1.0),
    CachePrices(read_multiplier=0.25, write_multiplier=1.0),
)


Prices = CachePrices | ConfiguredPrices


def describe_configured_prices(config: RouterConfig, model_ids) -> str:
    """``gpt-4.1 $2/1M, cache reads $0.5, no write premium; ...`` for the models used."""
    parts = []
    for model_id in sorted(set(model_ids)):
        model = config.model(model_id)
        if model is None:
            continue
        write = f"writes x{model.cache.write_multiplier:g}" if model.cache else "no write premium"
        reads = f"cache reads ${cached_prompt_price(model):g}"
        parts.append(f"{model.id} ${model.prompt_price:g}/1M, {reads}, {write}")
    return "; ".join(parts) or "no request was priced"


def tools_block(tokens: int) -> list[dict[str, Any]] | None:
    """One tool definition of about ``tokens`` estimated tokens (None for 0).

    Real agents send large definitions on every request (Claude Code: 24 tools,
    64.5 KB); the corpus files carry none. The block counts toward the budget
    and, from a session's second request on, is a cache read.
    """
    if tokens <= 0:
        return None
    shell = [{"type": "function", "function": {"name": "tools_block", "description": ""}}]
    room = max(tokens - tools_overhead_tokens(shell), 0) * 3
    shell[0]["function"]["description"] = "x" * room
    return shell


def priced_config(config: RouterConfig, prices: CachePrices) -> RouterConfig:
    """``config`` with every model billed at ``prices``' multipliers (see ``cache_prices``).

    Pinch's payback rule prices its steps by the model a request goes to; to
    measure it under a price model, every model must bill that way: reads at
    ``cached_prompt_price`` over ``prompt_price``, writes at 1.0 (no cache
    block), 1.25 (a 5-minute cache block) or 2.0 (a 1-hour one). Every model
    gets the same prompt price, so routing picks by tier and window alone.
    """
    write_blocks = {1.0: None, 1.25: ModelCacheConfig(ttl="5m"), 2.0: ModelCacheConfig(ttl="1h")}
    if prices.write_multiplier not in write_blocks:
        raise ReplayError(
            f"--cache-write-multiplier: the router bills writes at 1, 1.25 or 2 "
            f"(a model's cache block), not {prices.write_multiplier:g}"
        )
    if prices.read_multiplier > 1:
        raise ReplayError(f"--cache-read-multiplier: at most 1, not {prices.read_multiplier:g}")
    price = prices.price_per_1m or 1.0
    changes = {
        "prompt_price": price,
        "cached_prompt_price": price * prices.read_multiplier,
        "cache": write_blocks[prices.write_multiplier],
    }
    models = tuple(m.model_copy(update=changes) for m in config.models)
    return config.model_copy(update={"models": models})
