"""Prices for a model the user names that the router's config does not have.

``pinch_replay --model claude-sonnet-4-5`` asks what pinch saves at that
model's prices. The config's own models come first, priced as the live
router bills them; a name the config lacks is looked up in a small list of
well-known models' list prices (``price_list.yaml``, dated and sourced in
its header), and the replay's copy of the config gains that model, served
by a provider of its kind that the replay never calls. The verdict says
whose prices it used (``PriceSource``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from routing.config import RouterConfig
from routing.config.schema import ModelCacheConfig, ModelConfig, ProviderConfig

PRICE_LIST = Path(__file__).with_name("price_list.yaml")
# Where the added model's provider would be, were it called: the replay never calls it.
BASE_URLS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}


@dataclass(frozen=True)
class PriceSource:
    """Whose prices a named model was replayed at, for the verdict line."""

    model: str
    listed: bool  # from the built-in list (else the config's own model)
    date: str = ""

    def describe(self) -> str:
        if self.listed:
            return f"{self.model}'s list prices (the built-in price list of {self.date})"
        return f"{self.model}'s prices in the config"


@cache
def _price_list() -> dict:
    return yaml.safe_load(PRICE_LIST.read_text(encoding="utf-8"))


def listed_models(config: RouterConfig) -> list[str]:
    """The list's names that ``config`` has no model of."""
    return sorted(name for name in _price_list()["models"] if config.model(name) is None)


def with_listed_model(
    config: RouterConfig, name: str | None
) -> tuple[RouterConfig, PriceSource | None]:
    """``config`` able to serve ``name``, and whose prices those are (None: no model named).

    A name the config has, or the auto model, leaves it as it is; a listed
    name adds the model (never routable: ``auto`` still routes as configured)
    and its provider; any other name leaves it too, for ``replay_model`` to
    refuse with the names it knows.
    """
    if not name or name == config.routing.auto_model:
        return config, None
    if config.model(name) is not None:
        return config, PriceSource(name, listed=False)
    prices = _price_list()["models"].get(name)
    if prices is None:
        return config, None
    kind = prices["provider"]
    provider = f"price-list-{kind}"
    model = ModelConfig(
        id=name,
        provider=provider,
        tier=config.routing.default_tier,
        context_window=prices["context_window"],
        prompt_price=prices["prompt"],
        cached_prompt_price=prices["cached"],
        completion_price=prices["completion"],
        capabilities=("tools",),
        routable=False,
        # Anthropic bills writes at a premium, and caches only at marked breakpoints.
        cache=ModelCacheConfig(ttl="5m") if prices["cache_write"] == 1.25 else None,
        cache_lifetime_seconds=prices["lifetime"],
    )
    providers = {**config.providers, provider: ProviderConfig(kind=kind, base_url=BASE_URLS[kind])}
    changed = config.model_copy(update={"providers": providers, "models": (*config.models, model)})
    return changed, PriceSource(name, listed=True, date=_price_list()["date"])
