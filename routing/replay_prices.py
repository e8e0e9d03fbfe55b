"""The replay's price models: a prompt priced under a prefix cache, and every model billed so.

``routing.replay`` prices each request it plans under these; apart from it
because the prices and the config they imply are their own concern (and the
replay module stays under the size a module should have).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from routing.config import RouterConfig
from routing.config.schema import ModelCacheConfig
from routing.selection import tools_overhead_tokens


class ReplayError(ValueError):
    """The replay cannot start (bad path, bad file, bad setting); the message says why."""


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
