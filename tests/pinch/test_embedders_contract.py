"""One contract, held by every embedder (and by the cache wrapped around one).

The relevance edge relies on exactly these promises and nothing else, so a new
backend earns its place by passing this class unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

from pinch.embedders import BuiltinEmbedder, Embedder, OpenAIEmbedder
from pinch.embedding_cache import CachedEmbedder, EmbeddingCache
from tests.support.embedding_server import EmbeddingServer

TEXTS = [
    "why does test_parse_config fail on an empty yaml file",
    (
        "$ cat app/config.py\ndef parse_config(path):\n    data = yaml.safe_load(open(path))\n"
        "    return Config(**data)  # data is None for an empty file"
    ),
    "$ ls static/img\nlogo.png  banner.jpg  favicon.ico",
    "",
]


class EmbedderContract:
    """Mixed into one test class per embedder; ``make`` returns a fresh instance."""

    def make(self) -> Embedder:
        raise NotImplementedError

    def test_embed_returns_one_float32_row_per_text(self):
        vectors = self.make().embed(TEXTS)
        assert isinstance(vectors, np.ndarray)
        assert vectors.dtype == np.float32
        assert vectors.ndim == 2 and vectors.shape[0] == len(TEXTS) and vectors.shape[1] > 0
        assert np.isfinite(vectors).all()

    def test_the_width_does_not_depend_on_the_batch(self):
        embedder = self.make()
        assert embedder.embed(TEXTS[:2]).shape[1] == embedder.embed(TEXTS).shape[1]

    def test_embed_is_featurize_then_finish(self):
        embedder = self.make()
        features = embedder.featurize(TEXTS)
        assert len(features) == len(TEXTS)
        assert all(isinstance(f, bytes) for f in features)
        np.testing.assert_allclose(embedder.finish(features), embedder.embed(TEXTS), atol=1e-6)

    def test_features_depend_only_on_the_text(self):
        # Compared through finish: a float summed in another order may differ
        # in its last bit, and that is no difference to a cache.
        embedder = self.make()
        alone = embedder.featurize([TEXTS[1]])[0]
        in_a_batch = embedder.featurize(TEXTS)[1]
        elsewhere = self.make().featurize([TEXTS[1]])[0]  # another instance
        expected = embedder.finish([alone])
        np.testing.assert_allclose(embedder.finish([in_a_batch]), expected, atol=1e-6)
        np.testing.assert_allclose(embedder.finish([elsewhere]), expected, atol=1e-6)

    def test_identity_is_a_stable_nonempty_string(self):
        first, second = self.make(), self.make()
        assert isinstance(first.identity, str) and first.identity
        assert first.identity == second.identity

    def test_a_related_text_is_nearer_the_query_than_an_unrelated_one(self):
        vectors = self.make().embed(TEXTS[:3])
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        assert unit[1] @ unit[0] > unit[2] @ unit[0]

    def test_an_empty_batch_is_empty(self):
        assert self.make().featurize([]) == []
        assert self.make().finish([]).shape[0] == 0


class TestBuiltinHybrid(EmbedderContract):
    def make(self):
        embedder = BuiltinEmbedder()
        assert embedder.table is not None
        return embedder


class TestBuiltinHashedOnly(EmbedderContract):
    def make(self):
        return BuiltinEmbedder(static=False)


class TestOpenAICompatible(EmbedderContract):
    @pytest.fixture(autouse=True)
    def _server(self):
        with EmbeddingServer() as server:
            self.server = server
            yield

    def make(self):
        return OpenAIEmbedder(base_url=self.server.base_url, model="m", timeout_seconds=2.0)


class TestCachedBuiltin(EmbedderContract):
    def make(self):
        return CachedEmbedder(BuiltinEmbedder(), EmbeddingCache())
