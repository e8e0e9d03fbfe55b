"""The one interface every embedder keeps, and the one error it raises.

The relevance edge picks an embedder by ``pinch.relevance.backend`` and knows
nothing else about it. Two things shape the interface beyond ``embed``:

* Tool results come back turn after turn, so their embeddings are cached. But
  the builtin embedder's vectors are not a function of one text alone: its IDF
  is computed over the batch. So an embedder splits its work in two.
  ``featurize`` is the per-text part, deterministic for a text and an
  ``identity``, serialized to bytes so the same value can sit in process memory
  or in Redis; ``finish`` turns a batch of features into vectors. A later turn
  featurizes only the texts it has not seen and finishes the whole batch.
* Every failure is an ``EmbeddingError`` with a short, secret-free reason, so
  the edge has one thing to catch and one sentence to log.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class EmbeddingError(Exception):
    """An embedder could not produce usable vectors. The message is safe to log."""


class Embedder:
    """Base class: texts in, one row of floats per text out."""

    #: Names what produced a feature, for cache keys: two embedders with the
    #: same identity must produce the same feature for the same text.
    identity: str = ""

    @classmethod
    def from_settings(cls, settings) -> Embedder:
        """Build one from ``pinch.relevance`` (backend, model, base_url, ...)."""
        raise NotImplementedError

    def featurize(self, texts: Sequence[str]) -> list[bytes]:
        """The per-text, cacheable part of embedding, one value per text, in order."""
        raise NotImplementedError

    def finish(self, features: Sequence[bytes]) -> np.ndarray:
        """Vectors for a batch of features: float32, shape (len(features), d)."""
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``: float32, shape (len(texts), d). One backend call."""
        return self.finish(self.featurize(list(texts)))


def vector_to_bytes(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def stack_vectors(features: Sequence[bytes]) -> np.ndarray:
    """Rows from features that are each one little-endian float32 vector."""
    if not features:
        return np.zeros((0, 0), dtype=np.float32)
    widths = {len(f) for f in features}
    if len(widths) != 1 or 0 in widths or widths.pop() % 4:
        raise EmbeddingError("vectors of mismatched or empty dimensions")
    joined = np.frombuffer(b"".join(features), dtype="<f4")
    return joined.reshape(len(features), -1).astype(np.float32)
