"""Admin changes reach every host's cached config through the Redis change counter.

Each host caches the config rows per worker (routing/changes.py). On one
host the counter is a file in the data directory; with REDIS_URL it is a
Redis key, so a change saved on another host (another data directory) applies
at the next request here too.
"""

import subprocess
import sys

import pytest

from tests.support.config import base_config
from tests.support.redis import redis_url_or_skip
from tests.support.served import ROOT, gunicorn_router, prepare, router_env

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def redis_url():
    # The worker's own test database (TEST_REDIS_SERVER): never another checkout's.
    return redis_url_or_skip()


def pinch_header(served):
    response = served.chat({"model": "echo-medium", "messages": HI})
    assert response.status_code == 200
    return response.headers.get("X-Router-Pinch", "on")


def test_a_change_saved_on_another_host_applies_at_the_next_request(tmp_path, upstream, redis_url):
    host_a = tmp_path / "host-a"
    host_a.mkdir()
    env = router_env(host_a, base_config(upstream.base_url), REDIS_URL=redis_url)
    with gunicorn_router(env, prepare(env)) as a:
        assert {pinch_header(a) for _ in range(4)} == {"on"}  # both workers cache the rows

        other_host = {**a.env, "ROUTER_DATA_DIR": str(tmp_path / "host-b")}
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "manage.py"),
                "shell",
                "-c",
                "from routing.config.store import set_overrides; "
                "set_overrides({'pinch.enabled': False})",
            ],
            env=other_host,
            cwd=ROOT,
            check=True,
        )

        assert {pinch_header(a) for _ in range(4)} == {"disabled"}
