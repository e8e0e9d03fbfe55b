"""One Redis client and one circuit breaker per URL, shared by every Redis user of the process.

Redis is an optimisation for the router (the prefix probe's previous turn, the
embedding cache's features), never a dependency. A Redis that is down, or
that accepts connections and never answers, must not cost every request a
timeout: measured before this breaker, a silent Redis added 0.5 s to every
request through the prefix probe alone. So every user goes through ``call``:
after a failure the breaker opens and nobody touches Redis for
``OPEN_SECONDS``; then a single caller probes it (everyone else still sees it
as unavailable) and either closes the breaker or opens it again. A Redis in
trouble thus costs one short timeout per period, for the whole process,
whichever user meets it first.

It lives in routing, the lowest app that needs Redis (the prefix probe,
config changes, limits, and the embedding cache's shared tier it hands to
pinch); it imports nothing from Django.
"""

from __future__ import annotations

import logging
import threading
import time
from urllib.parse import urlsplit

from routing.registry import Registry

logger = logging.getLogger("router.redis")

# Redis answers in well under a millisecond on a LAN; a quarter second means
# it is in trouble, and a request must not wait on it longer.
TIMEOUT_SECONDS = 0.25

# After a failure, how long every user works without Redis before one tries again.
OPEN_SECONDS = 30.0


class RedisUnavailable(Exception):
    """Redis is down, slow, or its breaker is open; the caller falls back."""


def safe_location(url: str) -> str:
    """host:port/db of a Redis URL, without the password a URL may carry."""
    try:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.hostname}:{parts.port or 6379}{parts.path}"
    except ValueError:
        return "redis (unparseable URL)"


class SharedRedis:
    """A lazily connected client behind a breaker: closed, open, or one caller probing."""

    def __init__(self, url: str, client=None, open_seconds: float = OPEN_SECONDS):
        self.url = url
        self.location = safe_location(url)
        self.open_seconds = open_seconds
        self._client = client
        self._lock = threading.Lock()
        self._open_until = 0.0  # 0: closed
        self._probing = False

    def _connect(self):
        if self._client is None:
            import redis

            self._client = redis.Redis.from_url(
                self.url, socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS
            )
        return self._client

    @property
    def available(self) -> bool:
        return self._open_until == 0.0 or time.monotonic() >= self._open_until

    def _enter(self) -> bool:
        """May this caller use Redis now? (True for at most one prober when the period is over.)"""
        with self._lock:
            if self._open_until == 0.0:
                return True
            if self._probing or time.monotonic() < self._open_until:
                return False
            self._probing = True
            return True

    def call(self, operation):
        """``operation(client)``'s result, or RedisUnavailable (breaker open, or it failed now)."""
        if not self._enter():
            raise RedisUnavailable(f"Redis at {self.location}: breaker open")
        try:
            result = operation(self._connect())
        except Exception as error:  # noqa: BLE001 - RedisError, OSError, a bad URL: all "down"
            self._trip(error)
            raise RedisUnavailable(f"Redis at {self.location}: {type(error).__name__}") from None
        with self._lock:
            if self._open_until:
                logger.warning("redis_recovered: Redis at %s answers again", self.location)
            self._open_until = 0.0
            self._probing = False
        return result

    def _trip(self, error: Exception) -> None:
        with self._lock:
            if self._open_until == 0.0:
                logger.warning(
                    "redis_unavailable: Redis at %s failed (%s); working without it for %.0f s",
                    self.location,
                    type(error).__name__,
                    self.open_seconds,
                )
            self._open_until = time.monotonic() + self.open_seconds
            self._probing = False


_shared: Registry[SharedRedis] = Registry()


def shared_redis(url: str) -> SharedRedis:
    """The process's client and breaker for this URL, shared by every Redis user."""
    return _shared.get(url, lambda: SharedRedis(url))
