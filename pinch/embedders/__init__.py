"""Embedders for pinch's relevance ordering, chosen by ``pinch.relevance.backend``.

Interchangeable classes behind one base (``Embedder``) and one error type
(``EmbeddingError``), as Django does with session backends: the relevance edge
asks ``make_embedder(relevance_cfg)`` for one and never looks inside.

* ``builtin`` (the default): in process, offline, numpy only — see builtin.py.
* ``openai``: any OpenAI-compatible ``/v1/embeddings`` endpoint — see openai.py.

These modules are part of the edge, not of the pure pruning core: they read
files and, for ``openai``, talk to the network.
"""

from __future__ import annotations

from typing import Protocol

from pinch.embedders.base import Embedder, EmbeddingError
from pinch.embedders.builtin import BuiltinEmbedder
from pinch.embedders.openai import OpenAIEmbedder

__all__ = [
    "EMBEDDERS",
    "BuiltinEmbedder",
    "Embedder",
    "EmbedderSettings",
    "EmbeddingError",
    "OpenAIEmbedder",
    "make_embedder",
]


class EmbedderSettings(Protocol):
    """What an embedder is built from (``pinch.relevance`` in the router's config)."""

    backend: str
    model: str
    base_url: str
    api_key_env: str | None
    timeout_seconds: float


# pinch.relevance.backend -> the class; each builds itself with ``from_settings``.
EMBEDDERS: dict[str, type[Embedder]] = {"builtin": BuiltinEmbedder, "openai": OpenAIEmbedder}


def make_embedder(settings: EmbedderSettings) -> Embedder:
    """The embedder ``settings.backend`` names.

    Raises EmbeddingError for an unknown backend or an unusable setting, so a
    bad config fails closed like any other relevance failure.
    """
    cls = EMBEDDERS.get(settings.backend)
    if cls is None:
        raise EmbeddingError(
            f"unknown relevance backend {settings.backend!r}; expected one of {sorted(EMBEDDERS)}"
        )
    return cls.from_settings(settings)
