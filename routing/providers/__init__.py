"""Upstream providers: one package per protocol behind one interface, chosen by ``kind``.

``provider_for`` hands out the process's client for a provider's config; the
classes are registered by the ``kind`` a provider's config names.
"""

import threading

from routing.config import ModelConfig, ProviderConfig, RouterConfig
from routing.providers.anthropic import AnthropicProvider
from routing.providers.base import CallContext, Provider, ProviderError, StreamReply, monotonic_ms
from routing.providers.demo import DemoProvider
from routing.providers.openai import OpenAICompatibleProvider

__all__ = [
    "CallContext",
    "Provider",
    "ProviderError",
    "StreamReply",
    "monotonic_ms",
    "provider_for",
    "speaks",
]

PROVIDER_CLASSES: dict[str, type[Provider]] = {
    "openai": OpenAICompatibleProvider,
    "demo": DemoProvider,
    "anthropic": AnthropicProvider,
}


def speaks(config: RouterConfig, model: ModelConfig, flag: str) -> bool:
    """Whether the model's provider takes the client's protocol as sent.

    ``flag``: the provider's feature flag for it, ``speaks_messages`` or
    ``speaks_responses`` (a source's ``native_flag``).
    """
    return bool(getattr(provider_for(model.provider, config.providers[model.provider]), flag))


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
