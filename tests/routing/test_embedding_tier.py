"""The embedding cache's shared tier: workers share features through Redis, which never fails.

Tests use the real server (tests/support/redis.py), a failure under CI when it is absent.
"""

import logging
import uuid

import numpy as np
import pytest
import redis

from pinch.embedders import BuiltinEmbedder
from pinch.embedding_cache import CachedEmbedder, EmbeddingCache, cache_key
from pinch.relevance import relevance_for, reset_relevance_state
from routing.embedding_tier import REDIS_PREFIX, REDIS_TTL_SECONDS, RedisTier
from tests.pinch.test_relevance_cache import Counting
from tests.support.ports import refused_port
from tests.support.redis import REDIS_URL, redis_url_or_skip
from tests.support.relevance_scenario import conversation, make_cfg


@pytest.fixture(autouse=True)
def _fresh_process_state():
    reset_relevance_state()
    yield
    reset_relevance_state()


def redis_or_skip():
    return redis.Redis.from_url(redis_url_or_skip())


def test_workers_share_features_through_redis():
    client = redis_or_skip()
    texts = [f"unique {uuid.uuid4()} text {i}" for i in range(4)]
    worker_a = Counting(BuiltinEmbedder())
    worker_b = Counting(BuiltinEmbedder())
    try:
        CachedEmbedder(worker_a, EmbeddingCache(shared=RedisTier(REDIS_URL))).embed(texts)
        vectors = CachedEmbedder(worker_b, EmbeddingCache(shared=RedisTier(REDIS_URL))).embed(texts)
        assert worker_a.calls == [4] and worker_b.calls == []
        np.testing.assert_allclose(vectors, BuiltinEmbedder().embed(texts), atol=1e-6)
        key = REDIS_PREFIX + cache_key(worker_a.identity, texts[0])
        assert 0 < client.ttl(key) <= REDIS_TTL_SECONDS
    finally:
        client.delete(*[REDIS_PREFIX + cache_key(worker_a.identity, t) for t in texts])


def test_the_edge_uses_redis_when_given_its_tier():
    client = redis_or_skip()
    query = f"fix compute_total {uuid.uuid4()}"
    messages = conversation(query=query)
    identity = BuiltinEmbedder().identity
    try:
        order = relevance_for(messages, make_cfg(), 500, 0, shared_cache=RedisTier(REDIS_URL)).order
        assert order is not None
        assert client.exists(REDIS_PREFIX + cache_key(identity, query))
    finally:
        client.delete(REDIS_PREFIX + cache_key(identity, query))


def test_a_dead_redis_degrades_to_memory_and_logs_once(caplog):
    with refused_port() as port:
        url = f"redis://:hunter2@127.0.0.1:{port}/0"
        backend = Counting(BuiltinEmbedder())
        embedder = CachedEmbedder(backend, EmbeddingCache(shared=RedisTier(url)))
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
            order = relevance_for(
                conversation(), make_cfg(), 500, 0, shared_cache=RedisTier(url)
            ).order
        assert order is not None
        assert not any(r.getMessage().startswith("relevance_unavailable") for r in caplog.records)
