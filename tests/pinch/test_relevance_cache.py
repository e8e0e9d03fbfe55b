"""The embedding cache: a later turn embeds only what is new; Redis shares, never fails.

Redis tests use the real server at 127.0.0.1:6379 and are skipped, with the
reason, when it is not there.
"""

from __future__ import annotations

import logging
import os
import uuid

import numpy as np
import pytest

from pinch import relevance
from pinch.embedders import BuiltinEmbedder, Embedder
from pinch.embedding_cache import (
    ENTRY_OVERHEAD_BYTES,
    REDIS_PREFIX,
    REDIS_TTL_SECONDS,
    CachedEmbedder,
    EmbeddingCache,
    MemoryLRU,
    cache_key,
)
from pinch.relevance import relevance_for, reset_relevance_state
from tests.support.embedding_server import EmbeddingServer
from tests.support.ports import refused_port
from tests.support.relevance_scenario import RESULTS, conversation, make_cfg

REDIS_URL = "redis://127.0.0.1:6379/0"


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


def redis_or_skip():
    try:
        import redis

        client = redis.Redis.from_url(REDIS_URL, socket_timeout=0.5, socket_connect_timeout=0.5)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - whatever the failure, there is no Redis here
        # .ci/run starts Redis, so in CI its absence is a failure, not a skip.
        if os.environ.get("CI"):
            pytest.fail(f"no Redis at {REDIS_URL}: {type(exc).__name__}")
        pytest.skip(f"no Redis at {REDIS_URL}: {type(exc).__name__}")
    return client


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


# --- Redis ----------------------------------------------------------------------


def test_workers_share_features_through_redis():
    client = redis_or_skip()
    texts = [f"unique {uuid.uuid4()} text {i}" for i in range(4)]
    worker_a = Counting(BuiltinEmbedder())
    worker_b = Counting(BuiltinEmbedder())
    try:
        CachedEmbedder(worker_a, EmbeddingCache(redis_url=REDIS_URL)).embed(texts)
        vectors = CachedEmbedder(worker_b, EmbeddingCache(redis_url=REDIS_URL)).embed(texts)
        assert worker_a.calls == [4] and worker_b.calls == []
        np.testing.assert_allclose(vectors, BuiltinEmbedder().embed(texts), atol=1e-6)
        key = REDIS_PREFIX + cache_key(worker_a.identity, texts[0])
        assert 0 < client.ttl(key) <= REDIS_TTL_SECONDS
    finally:
        client.delete(*[REDIS_PREFIX + cache_key(worker_a.identity, t) for t in texts])


def test_the_edge_uses_redis_when_given_a_url():
    client = redis_or_skip()
    query = f"fix compute_total {uuid.uuid4()}"
    messages = conversation(query=query)
    identity = BuiltinEmbedder().identity
    try:
        order = relevance_for(messages, make_cfg(), 500, 0, redis_url=REDIS_URL).order
        assert order is not None
        assert client.exists(REDIS_PREFIX + cache_key(identity, query))
    finally:
        client.delete(REDIS_PREFIX + cache_key(identity, query))


def test_a_dead_redis_degrades_to_memory_and_logs_once(caplog):
    with refused_port() as port:
        url = f"redis://:hunter2@127.0.0.1:{port}/0"
        backend = Counting(BuiltinEmbedder())
        embedder = CachedEmbedder(backend, EmbeddingCache(redis_url=url))
        with caplog.at_level(logging.WARNING, logger="pinch.relevance.cache"):
            first = embedder.embed(["q", "a", "b"])
            second = embedder.embed(["q", "a", "b", "c"])
        assert first.shape[0] == 3 and second.shape[0] == 4
        assert backend.calls == [3, 1]  # the memory tier still works
        warnings = [r for r in caplog.records if "Redis" in r.getMessage()]
        assert len(warnings) == 1
        assert "hunter2" not in caplog.text


def test_the_edge_still_ranks_when_redis_is_down(caplog):
    with refused_port() as port:
        url = f"redis://127.0.0.1:{port}/0"
        with caplog.at_level(logging.WARNING):
            order = relevance_for(conversation(), make_cfg(), 500, 0, redis_url=url).order
        assert order is not None
        assert not any(r.getMessage().startswith("relevance_unavailable") for r in caplog.records)
