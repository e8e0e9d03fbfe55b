"""Upstream providers behind one interface (routing.providers.base), chosen by ``kind``.

``provider_for`` hands out the process's client for a provider's config; the
classes are registered by the ``kind`` a provider's config names: ``openai``
(any OpenAI-compatible upstream), ``anthropic`` (a package: the Messages API
and its translation), ``demo`` (answers without a model).
"""

import threading

from routing.config import ModelConfig, ProviderConfig, RouterConfig
from routing.providers.anthropic.client import AnthropicProvider
from routing.providers.base import CallContext, Capabilities, Provider, monotonic_ms
from routing.providers.demo import DemoProvider
from routing.providers.openai import OpenAICompatibleProvider

__all__ = [
    "CallContext",
    "Capabilities",
    "Provider",
    "model_provider",
    "monotonic_ms",
    "provider_for",
    "providers_for",
]

PROVIDER_CLASSES: dict[str, type[Provider]] = {
    "openai": OpenAICompatibleProvider,
    "demo": DemoProvider,
    "anthropic": AnthropicProvider,
}


def model_provider(config: RouterConfig, model: ModelConfig) -> Provider:
    """The provider that serves ``model`` under ``config``."""
    return provider_for(model.provider, config.providers[model.provider])


def providers_for(config: RouterConfig, models) -> tuple[Provider, ...]:
    """The provider of each of ``models``, in order: resolved once, when the plan is made."""
    return tuple(provider_for(m.provider, config.providers[m.provider]) for m in models)


_lock = threading.Lock()
_providers: dict = {}


def provider_for(name: str, config: ProviderConfig) -> Provider:
    """The process's client for this provider; a changed config makes a new one."""
    key = (name, config)
    with _lock:
        provider = _providers.get(key)
        if provider is None:
            if len(_providers) > 64:
                _providers.clear()
            provider = _providers[key] = PROVIDER_CLASSES[config.kind](name, config)
        return provider
