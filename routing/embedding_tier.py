"""The embedding cache's shared tier: pinch's relevance features in Redis, for every worker.

pinch/embedding_cache.py keeps features per process and takes a shared tier
from its caller, so pinch does no network I/O of its own; this is the one the
router hands it when REDIS_URL is set. Redis is an optimisation, never a
dependency: it is reached through the process's shared breaker
(routing/shared_redis.py), so an error is logged once, the process tier carries
on alone, and Redis is tried again after a pause, by one caller.
"""

from __future__ import annotations

from collections.abc import Sequence

from routing.registry import Registry
from routing.shared_redis import RedisUnavailable, SharedRedis, shared_redis

# Keys live a day: long enough for a session resumed after lunch,
# short enough that an abandoned one does not hold memory for long.
REDIS_TTL_SECONDS = 24 * 3600

# Prefix of every key this module writes to Redis, with a format version.
REDIS_PREFIX = "pinch:emb:1:"


class RedisTier:
    """The shared tier. Every method reports a Redis failure as absence."""

    def __init__(self, url: str, client=None):
        # A client given (tests) gets a breaker of its own; a URL, the process's shared one.
        self.redis = SharedRedis(url, client=client) if client is not None else shared_redis(url)

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        if not keys or not self.redis.available:
            return {}
        try:
            values = self.redis.call(lambda client: client.mget([REDIS_PREFIX + k for k in keys]))
        except RedisUnavailable:
            return {}
        return {k: v for k, v in zip(keys, values) if isinstance(v, bytes)}

    def put_many(self, items: dict[str, bytes]) -> None:
        if not items or not self.redis.available:
            return

        def write(client):
            pipe = client.pipeline(transaction=False)
            for key, value in items.items():
                pipe.set(REDIS_PREFIX + key, value, ex=REDIS_TTL_SECONDS)
            pipe.execute()

        try:
            self.redis.call(write)
        except RedisUnavailable:
            pass  # a cache write must never fail a request


_tiers: Registry[RedisTier] = Registry()


def shared_embedding_tier(redis_url: str) -> RedisTier | None:
    """The process's one Redis tier for ``redis_url``; None without a URL."""
    if not redis_url:
        return None
    return _tiers.get(redis_url, lambda: RedisTier(redis_url))
