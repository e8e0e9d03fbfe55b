"""The embedding cache: a later turn embeds only what is new (the shared Redis tier is
tests/routing/test_embedding_tier.py's)."""

from __future__ import annotations

import numpy as np
import pytest

from pinch import relevance
from pinch.embedders import BuiltinEmbedder, Embedder
from pinch.embedding_cache import (
    ENTRY_OVERHEAD_BYTES,
    CachedEmbedder,
    EmbeddingCache,
    MemoryLRU,
    cache_key,
)
from pinch.relevance import relevance_for, reset_relevance_state
from tests.support.embedding_server import EmbeddingServer
from tests.support.relevance_scenario import RESULTS, conversation, make_cfg


class Counting(Embedder):
    """Wraps an embedder and counts the texts that reach it."""

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.identity = inner.identity
        self.calls: list[int] = []

    def featurize(self, texts):
        self.calls.append(len(texts))
        return self.inner.featurize(texts)

    def finish(self, features):
        return self.inner.finish(features)


@pytest.fixture(autouse=True)
def _fresh_process_state():
    reset_relevance_state()
    yield
    reset_relevance_state()


# --- the process tier -----------------------------------------------------------


def test_the_lru_is_bounded_by_bytes_and_evicts_the_least_recently_used():
    entry = 100 + ENTRY_OVERHEAD_BYTES
    lru = MemoryLRU(max_bytes=3 * entry)
    lru.put_many({"a": b"x" * 100, "b": b"y" * 100, "c": b"z" * 100})
    assert lru.get_many(["a"]) == {"a": b"x" * 100}  # "a" is now the most recent
    lru.put_many({"d": b"w" * 100})
    assert set(lru.get_many(["a", "b", "c", "d"])) == {"a", "c", "d"}
    assert lru.bytes == 3 * entry


def test_the_lru_skips_a_value_larger_than_its_budget():
    lru = MemoryLRU(max_bytes=1000)
    lru.put_many({"small": b"s", "huge": b"h" * 5000})
    assert set(lru.get_many(["small", "huge"])) == {"small"}


def test_replacing_a_key_does_not_leak_bytes():
    lru = MemoryLRU(max_bytes=10_000)
    for _ in range(5):
        lru.put_many({"k": b"v" * 100})
    assert lru.bytes == 100 + ENTRY_OVERHEAD_BYTES and len(lru) == 1


def test_keys_differ_by_embedder_identity():
    assert cache_key("builtin:v1:hashed", "text") != cache_key("openai:x:m", "text")
    assert cache_key("a", "b\0c") != cache_key("a\0b", "c")


# --- turn after turn ------------------------------------------------------------


def test_a_second_turn_embeds_only_the_new_texts():
    backend = Counting(BuiltinEmbedder())
    embedder = CachedEmbedder(backend, EmbeddingCache())
    turn_one = ["query one"] + RESULTS[:4]
    turn_two = ["query two"] + RESULTS[:5]
    embedder.embed(turn_one)
    embedder.embed(turn_two)
    assert backend.calls == [5, 2]  # the new query and the new result


def test_cached_vectors_equal_fresh_ones():
    texts = ["the query"] + RESULTS
    cached = CachedEmbedder(BuiltinEmbedder(), EmbeddingCache())
    cached.embed(texts[:3])
    np.testing.assert_allclose(cached.embed(texts), BuiltinEmbedder().embed(texts), atol=1e-6)


def test_a_text_repeated_in_one_batch_is_embedded_once():
    backend = Counting(BuiltinEmbedder())
    CachedEmbedder(backend, EmbeddingCache()).embed(["q", "same", "same", "other"])
    assert backend.calls == [3]


def test_the_edge_embeds_only_what_a_later_turn_adds():
    with EmbeddingServer() as server:
        cfg = make_cfg(backend="openai", base_url=server.base_url)
        first = conversation(results=RESULTS[:4])
        assert relevance_for(first, cfg, 500, 0).order is not None
        assert server.texts_embedded == 1 + 4

        later = conversation(results=RESULTS, query="and now the discount rounding")
        order = relevance_for(later, cfg, 500, 0).order
        assert order is not None and len(order) == 5
        assert len(server.requests) == 2
        assert server.requests[1]["body"]["input"][0] == "and now the discount rounding"
        assert server.texts_embedded == 1 + 4 + 2


def test_an_entry_the_backend_cannot_use_is_embedded_again():
    # A model pulled again under the same name with another width: the cached
    # vectors no longer fit; the cache must count as absent, not fail forever.
    with EmbeddingServer() as server:
        cfg = make_cfg(backend="openai", base_url=server.base_url)
        messages = conversation()
        relevance_for(messages, cfg, 500, 0)
        cached = relevance._process.embedder(cfg.relevance, None)
        stale = {k: v[:-4] for k, v in cached.cache.memory._items.items()}
        cached.cache.memory.put_many(dict(list(stale.items())[:2]))
        assert relevance_for(messages, cfg, 500, 0).order is not None
        # One more call, with every text, whose answer replaced the stale entries.
        assert len(server.requests) == 2
        assert len(server.requests[1]["body"]["input"]) == 1 + len(RESULTS)
        assert relevance_for(messages, cfg, 500, 0).order is not None
        assert len(server.requests) == 2
