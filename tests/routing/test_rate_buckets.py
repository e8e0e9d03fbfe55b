"""The per-minute buckets: one contract for the process's memory, the host's files and Redis
(the Lua script).

Every store must refuse and admit the same sequence of requests, say which
limit is short and how long until the request would pass; a refused request
spends neither limit. The files are one bucket for every process that shares
the folder. Redis down, or the folder unusable: the limits still hold, per
host or per process, logged, never an error.
"""

import logging
import random
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from routing.limits.rate import (
    REDIS_PREFIX,
    Bucket,
    FileBuckets,
    MemoryBuckets,
    RedisBuckets,
    take,
)
from tests.support.ports import refused_port
from tests.support.redis import REDIS_URL, redis_url_or_skip


@pytest.fixture(params=["memory", "files", "redis"])
def store(request, tmp_path):
    if request.param == "memory":
        return MemoryBuckets()
    if request.param == "files":
        return FileBuckets(tmp_path / "limits", MemoryBuckets())
    return RedisBuckets(redis_url_or_skip(), MemoryBuckets())


@pytest.fixture
def key_id(store):
    """A key id no other test run uses; its Redis bucket is removed afterwards."""
    key = random.randrange(10**12, 10**13)
    yield key
    if isinstance(store, RedisBuckets):
        redis.Redis.from_url(REDIS_URL).delete(f"{REDIS_PREFIX}{key}")


def test_a_key_gets_its_requests_per_minute_then_waits_for_the_next_one(store, key_id):
    outcomes = [store.take(key_id, 3, 0, 0) for _ in range(4)]
    assert [o.taken for o in outcomes] == [True, True, True, False]
    refused = outcomes[-1]
    assert refused.short == "rpm"
    assert 19_000 < refused.wait_ms <= 20_000  # a request refills every 20 s


def test_prompt_tokens_are_taken_by_the_minute_and_a_refusal_says_how_long(store, key_id):
    assert store.take(key_id, 0, 1000, 600).taken
    refused = store.take(key_id, 0, 1000, 600)
    assert (refused.taken, refused.short) == (False, "tpm")
    assert 11_000 < refused.wait_ms <= 12_000  # 200 tokens short at 1,000 a minute


def test_a_refused_request_spends_neither_limit(store, key_id):
    assert store.take(key_id, 2, 1000, 900).taken
    assert not store.take(key_id, 2, 1000, 900).taken
    # The refused request took no request: one is left for a small prompt.
    assert store.take(key_id, 2, 1000, 50).taken
    assert store.take(key_id, 2, 1000, 10).short == "rpm"


def test_a_lowered_limit_applies_at_once(store, key_id):
    assert store.take(key_id, 100, 0, 0).taken
    assert store.take(key_id, 1, 0, 0).taken  # 99 left, clamped to the new limit of 1
    assert not store.take(key_id, 1, 0, 0).taken


def test_a_bucket_refills_continuously_at_the_limits_pace():
    outcome, bucket = take(None, 0, 2, 0, 0)
    outcome, bucket = take(bucket, 0, 2, 0, 0)
    assert outcome.taken and bucket.requests == 0
    assert not take(bucket, 29_000, 2, 0, 0)[0].taken
    outcome, after = take(bucket, 30_000, 2, 0, 0)  # half a minute: one request back
    assert outcome.taken and after == Bucket(0, 0, 30_000)


def test_redis_down_limits_each_process_alone_and_says_so_once(caplog):
    with refused_port() as port, caplog.at_level(logging.WARNING, logger="router.limits"):
        store = RedisBuckets(f"redis://127.0.0.1:{port}/0", MemoryBuckets())
        outcomes = [store.take(7, 2, 0, 0) for _ in range(3)]
    assert [o.taken for o in outcomes] == [True, True, False]
    local = [r for r in caplog.records if "rate_limits_local" in r.getMessage()]
    assert len(local) == 1


def test_every_process_sharing_the_folder_takes_from_one_bucket_a_key(tmp_path):
    # Two stores are two workers; their threads take at once, under the file's lock.
    workers = [FileBuckets(tmp_path, MemoryBuckets()) for _ in range(2)]
    with ThreadPoolExecutor(8) as pool:
        taken = list(pool.map(lambda n: workers[n % 2].take(7, 5, 0, 0).taken, range(20)))
    assert taken.count(True) == 5
    # Another key has its own bucket.
    assert workers[0].take(8, 5, 0, 0).taken


def test_an_unreadable_bucket_file_is_a_full_bucket(tmp_path):
    (tmp_path / "7.bucket").write_bytes(b"not three numbers")
    store = FileBuckets(tmp_path, MemoryBuckets())
    assert [store.take(7, 2, 0, 0).taken for _ in range(3)] == [True, True, False]


def test_a_folder_that_cannot_be_used_limits_each_process_alone_and_says_so_once(tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with caplog.at_level(logging.WARNING, logger="router.limits"):
        store = FileBuckets(blocker / "limits", MemoryBuckets())
        outcomes = [store.take(7, 2, 0, 0) for _ in range(3)]
    assert [o.taken for o in outcomes] == [True, True, False]
    alone = [r for r in caplog.records if "rate_limits_per_process" in r.getMessage()]
    assert len(alone) == 1
    # The folder usable again: the files hold the limits again (a fresh bucket), said once.
    blocker.unlink()
    with caplog.at_level(logging.WARNING, logger="router.limits"):
        assert [store.take(7, 2, 0, 0).taken for _ in range(3)] == [True, True, False]
    back = [r for r in caplog.records if "rate_limits_per_host" in r.getMessage()]
    assert len(back) == 1
    assert (blocker / "limits" / "7.bucket").is_file()
