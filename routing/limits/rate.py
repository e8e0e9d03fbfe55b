"""Requests and prompt tokens per minute, per key: two token buckets taken in one atomic step.

Each limited key has a bucket of requests (capacity ``rpm``, refilled at
``rpm``/60 a second) and one of prompt tokens (capacity ``tpm``, the same
way). A request takes its one request before it is planned (a request over
the key's rpm costs no classify, pinch or planning), then its measured
prompt tokens (after pinch); a step refused by one limit spends neither. A
bucket refills continuously, so a key kept at its limit is admitted at the
limit's pace, not in bursts at each minute's start, and a refusal knows
exactly how long until it would pass (its Retry-After).

With a Redis URL the buckets live in Redis, shared by every worker and host,
and one Lua script reads, refills, decides and writes them (atomic: two
instances cannot both take the last request); Redis's own clock times them,
so hosts whose clocks differ agree. Without Redis, or while Redis is
unavailable (routing.shared_redis's breaker: a short timeout at most once per
period), the buckets are files in the data folder, one a key, each taken
under an exclusive lock: every worker of an instance (gunicorn runs 2 by
default) and every instance on the host that shares the folder takes from the
same bucket, and each host enforces the key's limits on its own (logged once
per outage). A folder that cannot be used leaves each process its own
buckets in memory, logged once; never an error.
"""

from __future__ import annotations

import fcntl
import logging
import math
import os
import threading
import time
from dataclasses import dataclass

from routing.registry import Registry
from routing.shared_redis import FallbackLog, RedisUnavailable, shared_redis

log = logging.getLogger("router.limits")

MS_PER_MINUTE = 60_000

# Redis keys of the buckets, with a format version.
REDIS_PREFIX = "router:limit:1:"

# A bucket file: three numbers (a float's repr is at most 24 characters), padded.
_BUCKET_BYTES = 96

# How many keys' buckets one process keeps before starting afresh: far more
# than the keys a deployment has; a key forgotten this way is simply full.
MAX_MEMORY_BUCKETS = 10_000

# KEYS[1]: the key's bucket hash. ARGV: rpm, tpm (0 = no limit), tokens, requests (1 or 0).
# Returns {1, 0, ''} when taken, {0, wait_ms, 'rpm' or 'tpm'} (the limit that
# waits longest) when refused. The same arithmetic
# as ``take`` below, which the memory store runs (tests hold the two to it).
TAKE_SCRIPT = """
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local rpm, tpm, cost, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'r', 't', 'at')
local at = tonumber(state[3]) or now
local elapsed = math.max(now - at, 0)
local r = math.min(rpm, (tonumber(state[1]) or rpm) + elapsed * rpm / 60000)
local t = math.min(tpm, (tonumber(state[2]) or tpm) + elapsed * tpm / 60000)
local wait_r, wait_t = 0, 0
if rpm > 0 and r < n then wait_r = (n - r) * 60000 / rpm end
if tpm > 0 and t < cost then wait_t = (cost - t) * 60000 / tpm end
if wait_r > 0 or wait_t > 0 then
  if wait_r >= wait_t then return {0, math.ceil(wait_r), 'rpm'} end
  return {0, math.ceil(wait_t), 'tpm'}
end
redis.call('HSET', KEYS[1], 'r', tostring(r - n), 't', tostring(t - cost), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], 60000)
return {1, 0, ''}
"""


@dataclass(frozen=True)
class Taken:
    """A bucket step's outcome: refused ones say how long to wait and which limit is short."""

    taken: bool
    wait_ms: int = 0
    short: str = ""  # "rpm" or "tpm" (LimitRefusal's reasons) when refused


# Every step taken is this one outcome (frozen: shared, not built each time).
TAKEN = Taken(True)


@dataclass
class Bucket:
    requests: float
    tokens: float
    at_ms: float


def take(bucket: Bucket | None, now_ms: float, rpm: int, tpm: int, cost: int, count: int = 1):
    """(Taken, bucket after): the arithmetic of TAKE_SCRIPT, in Python. Pure.

    ``count`` requests (1, or 0 for a request's tokens alone) and ``cost`` tokens.
    """
    at = bucket.at_ms if bucket else now_ms
    elapsed = max(now_ms - at, 0)
    requests = min(rpm, (bucket.requests if bucket else rpm) + elapsed * rpm / MS_PER_MINUTE)
    tokens = min(tpm, (bucket.tokens if bucket else tpm) + elapsed * tpm / MS_PER_MINUTE)
    wait_requests = (count - requests) * MS_PER_MINUTE / rpm if rpm > 0 and requests < count else 0
    wait_tokens = (cost - tokens) * MS_PER_MINUTE / tpm if tpm > 0 and tokens < cost else 0
    if wait_requests > 0 or wait_tokens > 0:
        if wait_requests >= wait_tokens:
            return Taken(False, math.ceil(wait_requests), "rpm"), bucket
        return Taken(False, math.ceil(wait_tokens), "tpm"), bucket
    return TAKEN, Bucket(requests - count, tokens - cost, now_ms)


class MemoryBuckets:
    """The buckets of one process: what a single instance, or any instance without Redis, uses."""

    def __init__(self):
        self._lock = threading.Lock()
        self._buckets: dict[int, Bucket] = {}

    def take(self, key_id: int, rpm: int, tpm: int, cost: int, count: int = 1) -> Taken:
        now = time.monotonic() * 1000
        with self._lock:
            outcome, bucket = take(self._buckets.get(key_id), now, rpm, tpm, cost, count)
            if outcome.taken:
                if len(self._buckets) >= MAX_MEMORY_BUCKETS:
                    self._buckets.clear()
                self._buckets[key_id] = bucket
        return outcome


class FileBuckets:
    """The buckets of every process on this host that shares ``directory``: a file a key.

    A take opens the key's file, locks it (``flock``: the lock goes with the
    descriptor, so a killed worker never leaves it held), reads, refills,
    decides, writes and closes: the same arithmetic as the other stores, as
    one step for every worker. The wall clock times them, which every process
    on the host shares and which outlives a restart. No fsync: a bucket lost
    in a crash is only a full one.
    """

    def __init__(self, directory: str | os.PathLike, memory: MemoryBuckets):
        self.directory = directory
        self.memory = memory
        self._files = os.path.join(directory, "")  # a key's file is this and its name
        self._state = FallbackLog(
            "rate_limits_per_process: %s; each worker limits keys alone",
            f"rate_limits_per_host: {directory} holds the limits again",
            log,
        )

    def take(self, key_id: int, rpm: int, tpm: int, cost: int, count: int = 1) -> Taken:
        try:
            outcome = self._take(key_id, rpm, tpm, cost, count)
        except OSError as error:
            self._state.fell_back(error)
            return self.memory.take(key_id, rpm, tpm, cost, count)
        self._state.recovered()
        return outcome

    def _take(self, key_id: int, rpm: int, tpm: int, cost: int, count: int) -> Taken:
        path = f"{self._files}{key_id}.bucket"
        try:
            handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:  # the folder's first bucket
            os.makedirs(self.directory, exist_ok=True)
            handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            bucket = _read_bucket(os.pread(handle, _BUCKET_BYTES, 0))
            outcome, after = take(bucket, time.time() * 1000, rpm, tpm, cost, count)
            if outcome.taken:
                # Always the same length, so that nothing of a longer one stays behind.
                written = f"{after.requests!r} {after.tokens!r} {after.at_ms!r}"
                os.pwrite(handle, written.encode().ljust(_BUCKET_BYTES), 0)
            return outcome
        finally:
            os.close(handle)


def _read_bucket(raw: bytes) -> Bucket | None:
    """A bucket file's three numbers; None (a full bucket) for an empty or unreadable one."""
    parts = raw.split()
    if len(parts) != 3:
        return None
    try:
        requests, tokens, at_ms = float(parts[0]), float(parts[1]), float(parts[2])
    except ValueError:
        return None
    finite = math.isfinite
    if not (finite(requests) and finite(tokens) and finite(at_ms)):
        return None
    return Bucket(requests, tokens, at_ms)


class RedisBuckets:
    """The buckets in Redis, shared by every instance; the host's while it is away."""

    def __init__(self, url: str, fallback: FileBuckets | MemoryBuckets):
        self.redis = shared_redis(url)
        self.fallback = fallback
        self._scripts: dict[int, object] = {}  # id(client) -> its registered script
        self._state = FallbackLog(
            "rate_limits_local: %s; each host limits keys alone",
            f"rate_limits_shared: Redis at {self.redis.location} holds the limits again",
            log,
        )

    def _script(self, client):
        script = self._scripts.get(id(client))
        if script is None:
            script = self._scripts[id(client)] = client.register_script(TAKE_SCRIPT)
        return script

    def take(self, key_id: int, rpm: int, tpm: int, cost: int, count: int = 1) -> Taken:
        try:
            taken, wait, short = self.redis.call(
                lambda client: self._script(client)(
                    keys=[f"{REDIS_PREFIX}{key_id}"], args=[rpm, tpm, cost, count]
                )
            )
        except RedisUnavailable as error:
            self._state.fell_back(error)
            return self.fallback.take(key_id, rpm, tpm, cost, count)
        self._state.recovered()
        return Taken(bool(taken), int(wait), short.decode() if isinstance(short, bytes) else short)


_stores: Registry[FileBuckets | RedisBuckets] = Registry()


def buckets(redis_url: str | None, directory: str) -> FileBuckets | RedisBuckets:
    """The process's buckets: in Redis when a URL is configured, else in ``directory``'s files."""

    def make():
        host = FileBuckets(directory, MemoryBuckets())
        return RedisBuckets(redis_url, host) if redis_url else host

    return _stores.get((redis_url or "", directory), make)


def forget_buckets() -> None:
    """Drop this process's stores (tests, each with its own data folder: fresh buckets)."""
    _stores.clear()
