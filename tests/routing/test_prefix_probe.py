"""The prefix probe: per-conversation memory of the last payload, in process or in Redis."""

import time
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routing.classifier import classify
from routing.config import validate_config
from routing.prefix_probe import (
    DigestMemo,
    MemoryPrefixStore,
    PrefixProbe,
    conversation_key,
    digests,
    forget_conversations,
)
from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV, base_config


def msgs(*texts):
    return [{"role": "user", "content": t} for t in texts]


def test_first_turn_has_no_previous_payload():
    probe = PrefixProbe()
    assert probe.measure("k", msgs("a", "b")) == (0, 0, 2)


def test_consecutive_turns_match_up_to_the_first_changed_message():
    probe = PrefixProbe()
    probe.measure("k", msgs("a", "b", "c"))
    assert probe.measure("k", msgs("a", "b", "c", "d")) == (3, 3, 4)
    # An early message rewritten (as pruning does) breaks the prefix there.
    assert probe.measure("k", msgs("a", "B", "c", "d", "e")) == (1, 4, 5)


def test_conversations_do_not_see_each_other():
    probe = PrefixProbe()
    probe.measure("one", msgs("a"))
    assert probe.measure("two", msgs("a")) == (0, 0, 1)


def serve(probe, rows, key, messages, previous_length):
    """One request's figures, its shortened fingerprints left on ``rows`` as on a decision row."""
    figures = probe.figures(key, messages, (previous_length, len(messages)), rows.get)
    rows[key] = figures.packed
    return figures[:3]


def test_workers_without_redis_measure_a_conversation_as_one_worker_does():
    rows, single = {}, PrefixProbe()
    workers = (PrefixProbe(), PrefixProbe())
    turns = [msgs("a"), msgs("a", "b", "c"), msgs("a", "B", "c", "d", "e"), msgs(*"aBcdefg")]
    for n, turn in enumerate(turns):
        previous_length = len(turns[n - 1]) if n else 0
        assert serve(workers[n % 2], rows, "k", turn, previous_length) == single.measure("k", turn)
    assert single.measure("k", msgs(*"aBcdefgh")) == (7, 7, 8)


def test_a_worker_whose_memory_is_the_turn_before_reads_no_row():
    probe, rows = PrefixProbe(), {}
    serve(probe, rows, "k", msgs("a", "b"), 0)

    def unread(key):
        raise AssertionError("read a row although memory held the previous turn")

    assert probe.figures("k", msgs("a", "b", "c"), (2, 3), unread)[:3] == (2, 2, 3)
    assert probe.figures("k", msgs("a", "b", "c"), (2, 3), unread)[:3] == (3, 3, 3)  # a retry


def test_a_worker_with_an_older_turn_compares_with_the_last_row():
    worker_a, worker_b, rows = PrefixProbe(), PrefixProbe(), {}
    serve(worker_a, rows, "k", msgs("a"), 0)
    serve(worker_b, rows, "k", msgs("X", "b", "c"), 1)  # the client rewrote its first message
    # worker_a's memory ("a") would say one message matches; the last row says none.
    assert serve(worker_a, rows, "k", msgs("X", "b", "c", "d"), 3) == (3, 3, 4)


# A turn: the agent's new messages, maybe with an earlier one rewritten (as a pinch step or a
# client's edit does), on one of three workers; or a retry, which the same worker serves.
TURN = st.one_of(
    st.tuples(st.integers(1, 3), st.none() | st.integers(0, 40), st.integers(0, 2)),
    st.just("retry"),
)


@given(st.lists(TURN, min_size=1, max_size=25))
def test_any_spread_of_turns_over_workers_measures_as_one_worker(turns):
    rows, single = {}, PrefixProbe()
    workers = [PrefixProbe(), PrefixProbe(), PrefixProbe()]
    messages, before, worker = msgs("task"), 0, 0
    for n, turn in enumerate(turns):
        if turn != "retry":
            added, rewrite, worker = turn
            before, messages = len(messages), messages + msgs(*(f"m{n}.{k}" for k in range(added)))
            if rewrite is not None:
                messages[rewrite % before] = msgs(f"edit {n}")[0]
        expected = single.measure("k", messages)
        assert serve(workers[worker], rows, "k", messages, before) == expected


@pytest.mark.parametrize("row", [None, "", "abc", "0123456789", "ab!d", "ab=="])
def test_a_missing_or_malformed_row_leaves_the_workers_own_memory(row):
    probe = PrefixProbe()
    probe.measure("k", msgs("a"))
    assert probe.figures("k", msgs("a", "b", "c"), (2, 3), {"k": row}.get)[:3] == (1, 1, 3)
    assert PrefixProbe().figures("k", msgs("a"), (0, 1), {"k": row}.get)[:3] == (0, 0, 1)


def test_memory_store_is_bounded_and_forgets_the_oldest():
    store = MemoryPrefixStore(max_items=2)
    store.swap("a", ["1"])
    store.swap("b", ["1"])
    store.swap("c", ["1"])
    assert store.swap("a", ["2"]) is None
    assert store.swap("c", ["2"]) == ["1"]


def test_memory_store_expires_old_turns():
    store = MemoryPrefixStore(ttl=0)
    store.swap("a", ["1"])
    assert store.swap("a", ["2"]) is None


def test_conversation_key_ignores_later_turns_but_not_the_opening():
    opening = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    later = opening + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
    assert conversation_key(1, "auto", opening) == conversation_key(1, "auto", later)
    assert conversation_key(1, "auto", opening) != conversation_key(2, "auto", opening)
    other = [{"role": "system", "content": "s"}, {"role": "user", "content": "other task"}]
    assert conversation_key(1, "auto", opening) != conversation_key(1, "auto", other)


def redis_url():
    import redis

    url = "redis://127.0.0.1:6379/15"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=0.5).ping()
    except redis.RedisError:
        pytest.fail("Redis is not running on 127.0.0.1:6379 (CI starts it; see .ci/run)")
    return url


def test_two_workers_sharing_redis_see_each_others_previous_turn():
    url = redis_url()
    key = uuid.uuid4().hex
    worker_a, worker_b = PrefixProbe(url), PrefixProbe(url)
    worker_a.measure(key, msgs("a", "b"))
    assert worker_b.measure(key, msgs("a", "b", "c")) == (2, 2, 3)


def test_redis_down_degrades_to_memory_and_logs(caplog):
    probe = PrefixProbe("redis://127.0.0.1:1/0")
    assert probe.measure("k", msgs("a")) == (0, 0, 1)
    assert probe.measure("k", msgs("a", "b")) == (1, 1, 2)
    assert "prefix_probe_redis_unavailable" in caplog.text


def test_llm_classifier_uses_the_models_tier_word(upstream, monkeypatch):
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    data = base_config(upstream.base_url)
    data["models"].append(
        {
            "id": "judge",
            "provider": "up",
            "upstream_model": "says-hard",
            "tier": "easy",
            "context_window": 4096,
        }
    )
    data["classifier"] = {"backend": "llm", "llm": {"model": "judge", "timeout_seconds": 2}}
    result = classify(msgs("hi"), None, validate_config(data))
    assert (result.tier, result.outcome) == ("hard", "llm")
    sent = upstream.bodies()[0]
    assert sent["model"] == "says-hard"
    assert "hard" in sent["messages"][0]["content"]


def test_llm_classifier_answer_that_names_no_tier_falls_back(upstream):
    data = base_config(upstream.base_url)
    data["models"].append(
        {
            "id": "judge",
            "provider": "up",
            "upstream_model": "says-dunno",
            "tier": "easy",
            "context_window": 4096,
        }
    )
    data["classifier"] = {"backend": "llm", "llm": {"model": "judge"}}
    result = classify(msgs("hi"), None, validate_config(data))
    assert (result.tier, result.outcome) == ("easy", "llm_fallback")


def test_memory_store_is_bounded_by_bytes():
    store = MemoryPrefixStore(max_bytes=200_000)
    for conversation in range(100):  # ~90 KB of fingerprints each
        store.swap(str(conversation), [f"{n:032x}" for n in range(1000)])
    assert 0 < store.bytes <= 200_000
    assert store.swap("99", ["x"]) is not None  # the newest kept, the oldest gone
    assert store.swap("0", ["x"]) is None


def test_memory_store_counts_a_conversation_rewritten_each_turn_once():
    store = MemoryPrefixStore(max_bytes=200_000)
    store.put("ledger", "x" * 1000)
    once = store.bytes
    for _ in range(500):
        store.put("ledger", "x" * 1000)
    assert store.bytes == once
    store.put("ledger", "x" * 300_000)  # larger than the whole budget: kept nowhere
    assert store.get("ledger") is None
    assert store.bytes == 0


def test_memory_store_lets_expired_turns_go_without_a_lookup():
    store = MemoryPrefixStore(ttl=0.05)
    store.swap("idle", [f"{n:032x}" for n in range(1000)])
    time.sleep(0.1)
    store.swap("busy", ["1"])  # any write expires what is due
    assert store.bytes < 1000


def test_the_hash_memo_is_bounded_by_its_texts_and_forgets_the_least_recently_used():
    memo = DigestMemo(max_chars=3000)
    for name in ("a", "b"):
        memo[(b"user\0", name * 1000, b"")] = name
    memo.get((b"user\0", "a" * 1000, b""))  # read: now the more recent of the two
    memo[(b"user\0", "c" * 1000, b"")] = "c"
    memo[(b"user\0", "x" * 5000, b"")] = "x"  # larger than the whole memo: not kept

    assert memo.chars <= 3000
    assert memo.get((b"user\0", "b" * 1000, b"")) is None
    assert [memo.get((b"user\0", n * 1000, b"")) for n in "ac"] == ["a", "c"]
    assert memo.get((b"user\0", "x" * 5000, b"")) is None


def test_a_conversation_measures_alike_with_its_texts_hashed_by_an_earlier_request():
    long = [{"role": "user", "content": "task"}, {"role": "tool", "content": "out\n" * 500}]
    cold, warm = PrefixProbe(), PrefixProbe()
    forget_conversations()
    assert cold.figures("k", long) == warm.figures("k", long)  # the memo fills
    assert warm.figures("k", long) == cold.figures("k", long)  # and is read
    assert digests.chars >= 2000
