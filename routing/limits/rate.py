"""Requests and prompt tokens per minute, per key: two token buckets taken in one atomic step.

Each limited key has a bucket of requests (capacity ``rpm``, refilled at
``rpm``/60 a second) and one of prompt tokens (capacity ``tpm``, the same
way). A request takes one request and its measured prompt tokens (after
pinch) from both, or from neither: a request refused by one limit does not
spend the other. A bucket refills continuously, so a key kept at its limit
is admitted at the limit's pace, not in bursts at each minute's start, and
a refusal knows exactly how long until it would pass (its Retry-After).

With a Redis URL the buckets live in Redis, shared by every worker and host,
and one Lua script reads, refills, decides and writes them (atomic: two
instances cannot both take the last request); Redis's own clock times them,
so hosts whose clocks differ agree. Without Redis, or while Redis is
unavailable (router_project.redis's breaker: a short timeout at most once per
period), the buckets are this process's: each instance then enforces the
key's limits on its own (logged once per outage), never an error.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass

from router_project.redis import RedisUnavailable, shared_redis
from router_project.registry import Registry

log = logging.getLogger("router.limits")

MS_PER_MINUTE = 60_000

# Redis keys of the buckets, with a format version.
REDIS_PREFIX = "router:limit:1:"

# How many keys' buckets one process keeps before starting afresh: far more
# than the keys a deployment has; a key forgotten this way is simply full.
MAX_MEMORY_BUCKETS = 10_000

# KEYS[1]: the key's bucket hash. ARGV: rpm, tpm (0 = no limit), tokens.
# Returns {1, 0, ''} when taken, {0, wait_ms, 'rpm' or 'tpm'} (the limit that
# waits longest) when refused. The same arithmetic
# as ``take`` below, which the memory store runs (tests hold the two to it).
TAKE_SCRIPT = """
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local rpm, tpm, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'r', 't', 'at')
local at = tonumber(state[3]) or now
local elapsed = math.max(now - at, 0)
local r = math.min(rpm, (tonumber(state[1]) or rpm) + elapsed * rpm / 60000)
local t = math.min(tpm, (tonumber(state[2]) or tpm) + elapsed * tpm / 60000)
local wait_r, wait_t = 0, 0
if rpm > 0 and r < 1 then wait_r = (1 - r) * 60000 / rpm end
if tpm > 0 and t < cost then wait_t = (cost - t) * 60000 / tpm end
if wait_r > 0 or wait_t > 0 then
  if wait_r >= wait_t then return {0, math.ceil(wait_r), 'rpm'} end
  return {0, math.ceil(wait_t), 'tpm'}
end
redis.call('HSET', KEYS[1], 'r', tostring(r - 1), 't', tostring(t - cost), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], 60000)
return {1, 0, ''}
"""


@dataclass(frozen=True)
class Taken:
    """A bucket step's outcome: refused ones say how long to wait and which limit is short."""

    taken: bool
    wait_ms: int = 0
    short: str = ""  # "rpm" or "tpm" (LimitRefusal's reasons) when refused


@dataclass
class Bucket:
    requests: float
    tokens: float
    at_ms: float


def take(bucket: Bucket | None, now_ms: float, rpm: int, tpm: int, cost: int):
    """(Taken, bucket after): the arithmetic of TAKE_SCRIPT, in Python. Pure."""
    at = bucket.at_ms if bucket else now_ms
    elapsed = max(now_ms - at, 0)
    requests = min(rpm, (bucket.requests if bucket else rpm) + elapsed * rpm / MS_PER_MINUTE)
    tokens = min(tpm, (bucket.tokens if bucket else tpm) + elapsed * tpm / MS_PER_MINUTE)
    wait_requests = (1 - requests) * MS_PER_MINUTE / rpm if rpm > 0 and requests < 1 else 0
    wait_tokens = (cost - tokens) * MS_PER_MINUTE / tpm if tpm > 0 and tokens < cost else 0
    if wait_requests > 0 or wait_tokens > 0:
        if wait_requests >= wait_tokens:
            return Taken(False, math.ceil(wait_requests), "rpm"), bucket
        return Taken(False, math.ceil(wait_tokens), "tpm"), bucket
    return Taken(True), Bucket(requests - 1, tokens - cost, now_ms)


class MemoryBuckets:
    """The buckets of one process: what a single instance, or any instance without Redis, uses."""

    def __init__(self):
        self._lock = threading.Lock()
        self._buckets: dict[int, Bucket] = {}

    def take(self, key_id: int, rpm: int, tpm: int, cost: int) -> Taken:
        now = time.monotonic() * 1000
        with self._lock:
            outcome, bucket = take(self._buckets.get(key_id), now, rpm, tpm, cost)
            if outcome.taken:
                if len(self._buckets) >= MAX_MEMORY_BUCKETS:
                    self._buckets.clear()
                self._buckets[key_id] = bucket
        return outcome


class RedisBuckets:
    """The buckets in Redis, shared by every instance; this process's memory while it is away."""

    def __init__(self, url: str, memory: MemoryBuckets):
        self.redis = shared_redis(url)
        self.memory = memory
        self._scripts: dict[int, object] = {}  # id(client) -> its registered script
        self._local = False

    def _script(self, client):
        script = self._scripts.get(id(client))
        if script is None:
            script = self._scripts[id(client)] = client.register_script(TAKE_SCRIPT)
        return script

    def take(self, key_id: int, rpm: int, tpm: int, cost: int) -> Taken:
        try:
            taken, wait, short = self.redis.call(
                lambda client: self._script(client)(
                    keys=[f"{REDIS_PREFIX}{key_id}"], args=[rpm, tpm, cost]
                )
            )
        except RedisUnavailable as error:
            if not self._local:
                log.warning("rate_limits_local: %s; each instance limits keys alone", error)
                self._local = True
            return self.memory.take(key_id, rpm, tpm, cost)
        if self._local:
            log.warning(
                "rate_limits_shared: Redis at %s holds the limits again", self.redis.location
            )
            self._local = False
        return Taken(bool(taken), int(wait), short.decode() if isinstance(short, bytes) else short)


_stores: Registry[MemoryBuckets | RedisBuckets] = Registry()


def buckets(redis_url: str | None) -> MemoryBuckets | RedisBuckets:
    """The process's buckets: in Redis when a URL is configured, else in memory."""

    def make():
        memory = MemoryBuckets()
        return RedisBuckets(redis_url, memory) if redis_url else memory

    return _stores.get(redis_url or "", make)


def forget_buckets() -> None:
    """Drop this process's buckets (tests; a key's next request finds its buckets full)."""
    _stores.clear()
