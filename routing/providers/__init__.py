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
    "speaks_messages",
]

PROVIDER_CLASSES: dict[str, type[Provider]] = {
    "openai": OpenAICompatibleProvider,
    "demo": DemoProvider,
    "anthropic": AnthropicProvider,
}


def speaks_messages(config: RouterConfig, model: ModelConfig) -> bool:
    """Whether the model's provider takes a Messages API request as the client sent it."""
    return PROVIDER_CLASSES[config.providers[model.provider].kind].speaks_messages


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
