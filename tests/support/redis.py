"""The test Redis: its URL, or a skip (a failure under CI) when nothing answers there."""

import os

import pytest
import redis

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/13")


def redis_url_or_skip() -> str:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError as error:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs Redis at {REDIS_URL}: {error}")
        pytest.skip(f"no Redis at {REDIS_URL}")
    return REDIS_URL
