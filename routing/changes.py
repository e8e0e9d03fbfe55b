"""The change counter: how every worker learns that the config overrides or the keys changed.

The effective config (routing/config/store.py) and the router keys
(routing/auth.py) are cached per process so that a request reads nothing from
the database. A change saved through Django (admin, the named services, the
ORM) bumps this counter, once when it is made and again when it commits; a
worker that sees a new value drops its caches at its next request. On one host
the counter is a file in the data directory, so telling it apart costs a
``stat``, no query; with ``REDIS_URL`` set it is a Redis key, so the workers of
every host see it. Caches also expire after ``CACHE_SECONDS`` whatever the
counter says, which bounds how long a change made outside Django (raw SQL,
another host without Redis) takes to apply.

``version()`` returns None when the counter cannot be read (Redis down, or
its breaker open: routing/shared_redis.py): the callers then read the
database, as if nothing were cached.

An API request reads the counter once (``read_once``, opened by the API
views): the key check and every read of the config in it get that value, so
the request sees one state from start to end, and pays one ``stat`` (or one
Redis round trip) instead of one per reader; a change is seen at the next
request, as before.
"""

import logging
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import transaction

from routing.shared_redis import RedisUnavailable, shared_redis

log = logging.getLogger(__name__)

CACHE_SECONDS = 30.0
REDIS_KEY = "llm-router:state-version"


COUNTER_NAME = "state.version"


def counter_path() -> Path:
    return Path(settings.DATA_DIR) / COUNTER_NAME


def _redis():
    return shared_redis(settings.REDIS_URL) if settings.REDIS_URL else None


# The value read in this thread's read_once() scope; absent outside one.
_held = threading.local()
_OUTSIDE = object()
_UNREAD = object()


@contextmanager
def read_once():
    """Within: version() reads the counter the first time and returns that value after."""
    _held.value = _UNREAD
    try:
        yield
    finally:
        del _held.value


def version():
    """An opaque value that changes whenever bump() is called, or None if unknown."""
    value = getattr(_held, "value", _OUTSIDE)
    if value is _OUTSIDE:
        return _read()
    if value is _UNREAD:
        value = _held.value = _read()
    return value


def _read():
    client = _redis()
    if client is not None:
        try:
            return client.call(lambda redis: redis.get(REDIS_KEY)) or b"0"
        except RedisUnavailable:
            return None  # read the database instead (the breaker has logged why)
    try:
        # A plain stat of a joined string: a Path built and stat'ed took 6 us, twice a request.
        stat = os.stat(os.path.join(settings.DATA_DIR, COUNTER_NAME))
    except FileNotFoundError:
        return "none"
    except OSError:
        return None
    # A new file replaces the old one on each bump: its inode changes even
    # when two bumps fall in the same clock tick.
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


def _bump_now():
    client = _redis()
    if client is not None:
        try:
            client.call(lambda redis: redis.incr(REDIS_KEY))
            return
        except RedisUnavailable as error:
            log.warning("state_version_bump_failed reason=%s", error)
    path = counter_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
        temporary.write_text(f"{time.time_ns()}\n")
        os.replace(temporary, path)
    except OSError as error:
        log.warning("state_version_bump_failed reason=%s", error)


def bump():
    """Tell every worker to re-read overrides and keys: now, and once the change commits.

    The first bump covers the workers that read after the commit anyway; the
    second one, after the commit, drops what a worker may have cached from the
    database between the first bump and the commit.
    """
    _bump_now()
    transaction.on_commit(_bump_now)


def fresh(cached_version, loaded_at: float, current_version, max_age=None) -> bool:
    """Is a cache entry read at ``loaded_at`` (monotonic) under ``cached_version`` still good?"""
    return (
        current_version is not None
        and cached_version == current_version
        and time.monotonic() - loaded_at < (CACHE_SECONDS if max_age is None else max_age)
    )
