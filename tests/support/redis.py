"""The test Redis: its URL, or a skip (a failure under CI) when nothing answers there.

Under pytest-xdist each worker gets a database of its own (gw0 -> 8, gw1 -> 9, ...):
workers' test databases reuse primary keys, and Redis keys are named after them.
"""

import os

import pytest
import redis


def _database() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return 8 + int(worker[2:]) % 8 if worker.startswith("gw") else 13


# TEST_REDIS_SERVER: another server for the per-worker databases (two checkouts testing at once).
_SERVER = os.environ.get("TEST_REDIS_SERVER", "redis://127.0.0.1:6379")
REDIS_URL = os.environ.get("TEST_REDIS_URL", f"{_SERVER}/{_database()}")


def redis_url_or_skip() -> str:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError as error:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs Redis at {REDIS_URL}: {error}")
        pytest.skip(f"no Redis at {REDIS_URL}")
    return REDIS_URL
