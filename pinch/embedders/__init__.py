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

from pinch.embedders.base import Embedder, EmbeddingError
from pinch.embedders.builtin import BuiltinEmbedder
from pinch.embedders.openai import OpenAIEmbedder

__all__ = [
    "BACKENDS",
    "BuiltinEmbedder",
    "Embedder",
    "EmbeddingError",
    "OpenAIEmbedder",
    "make_embedder",
]

# The names pinch.relevance.backend accepts.
BACKENDS = ("builtin", "openai")


def make_embedder(relevance_cfg) -> Embedder:
    """The embedder ``relevance_cfg`` (pinch.relevance) asks for.

    Raises EmbeddingError for an unknown backend or an unusable setting, so a
    bad config fails closed like any other relevance failure.
    """
    backend = getattr(relevance_cfg, "backend", "builtin") or "builtin"
    if backend == "builtin":
        return BuiltinEmbedder()
    if backend == "openai":
        return OpenAIEmbedder(
            base_url=relevance_cfg.base_url,
            model=relevance_cfg.model,
            api_key_env=getattr(relevance_cfg, "api_key_env", None),
            timeout_seconds=relevance_cfg.timeout_seconds,
        )
    raise EmbeddingError(f"unknown relevance backend {backend!r}; expected one of {BACKENDS}")
