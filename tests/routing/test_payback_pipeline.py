"""The payback steps in the request path: real requests, the ledger in the store, fail-closed."""

import json
import logging
import uuid

import openai
import pytest
from django.conf import settings

from pinch.payback import Ledger
from routing import pruning
from routing.auth import create_api_key
from routing.conversation_state import RecordedState
from routing.models import Conversation, RouteDecision
from routing.prefix_probe import PrefixProbe, forget_conversations, prefix_probe
from tests.routing.test_prefix_probe import redis_url

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def payback_config(router_config, write_config):
    router_config["pinch"]["payback"] = {"enabled": True}
    router_config["pinch"]["budget_tokens"] = 8000
    write_config(router_config)
    return router_config


@pytest.fixture
def sdk(live_server, api_key):
    return openai.OpenAI(
        base_url=live_server.url + "/v1", api_key=api_key, max_retries=0, timeout=30
    )


def session_requests(corpus_dir, name="013.json"):
    messages = json.loads((corpus_dir / name).read_text())["messages"]
    return [messages[:t] for t, m in enumerate(messages) if t > 0 and m["role"] == "assistant"]


def test_between_steps_the_payload_only_grows_at_its_end(sdk, payback_config, upstream, corpus_dir):
    requests = session_requests(corpus_dir)[-12:]
    for messages in requests:
        sdk.chat.completions.create(model="echo-hard", messages=messages)
    sent = [body["messages"] for body in upstream.bodies()]
    rows = list(RouteDecision.objects.order_by("id"))
    assert any(row.pinch_final_tokens < row.pinch_original_tokens for row in rows)
    for before, after, messages in zip(sent, sent[1:], requests[1:]):
        assert len(after) == len(messages)
        # Only tool results ever differ from what the agent sent.
        for original, shipped in zip(messages, after):
            if original["role"] != "tool":
                assert shipped == original
        # Either the whole previous payload repeats, or a step rewrote its end.
        repeats = after[: len(before)] == before
        first_change = (
            next(i for i, (a, b) in enumerate(zip(before, after)) if a != b)
            if not repeats
            else None
        )
        assert repeats or after[first_change]["role"] == "tool"


def test_a_worker_without_the_ledger_sends_the_same_payload(
    sdk, payback_config, upstream, corpus_dir, monkeypatch
):
    requests = session_requests(corpus_dir)[-4:]
    for messages in requests:
        sdk.chat.completions.create(model="echo-hard", messages=messages)
    messages = requests[-1]
    # Another worker: nothing in its memory, so it reads the ledger its conversation's row holds...
    forget_conversations()
    sdk.chat.completions.create(model="echo-hard", messages=messages)
    # ... or, with none recorded either, rebuilds the decisions from the messages.
    forget_conversations()
    monkeypatch.setattr(RecordedState, "read", lambda self, key, column: None)
    sdk.chat.completions.create(model="echo-hard", messages=messages)
    *_, first, second, third = upstream.bodies()
    assert first["messages"] == second["messages"] == third["messages"]
    assert first["messages"] != messages


class Clock:
    """The planning clock, moved by the test: cold gaps without waiting for them."""

    def __init__(self):
        self.now = 1_800_000_000.0

    def time(self) -> float:
        return self.now


def test_a_conversation_split_over_two_workers_is_planned_as_one_worker_plans_it(
    sdk, payback_config, upstream, corpus_dir, monkeypatch, live_server
):
    clock = Clock()
    monkeypatch.setattr(pruning, "time", clock)
    requests = session_requests(corpus_dir)[-8:]
    # Twelve minutes of quiet before the fifth request (worker A's): past echo-hard's
    # cache lifetime of ten. Then two gaps within it, but together past it: A's own
    # memory of the conversation is older than the lifetime when it serves the seventh.
    gaps = [10, 10, 10, 10, 720, 400, 400, 10]
    _, raw = create_api_key("split")
    split = openai.OpenAI(base_url=live_server.url + "/v1", api_key=raw, max_retries=0)
    store = prefix_probe(settings.REDIS_URL)
    key = None
    for n, (gap, messages) in enumerate(zip(gaps, requests)):
        clock.now += gap
        sdk.chat.completions.create(model="echo-hard", messages=messages)  # one worker
        if n % 2 == 0:  # worker A, which remembers what it served
            split.chat.completions.create(model="echo-hard", messages=messages)
            key = key or RouteDecision.objects.get(api_key__name="split").conversation
            continue
        # Worker B, with nothing in its memory; after it, A's memory is one request behind.
        a_remembers = store.load_ledger(key)
        store.save_ledger(key, "")
        split.chat.completions.create(model="echo-hard", messages=messages)
        store.save_ledger(key, a_remembers)

    bodies = [body["messages"] for body in upstream.bodies()]
    one_worker, two_workers = bodies[0::2], bodies[1::2]
    assert two_workers == one_worker
    # One cold request, the fifth, in both; and pinch changed what was sent.
    for name in ("tests", "split"):
        rows = RouteDecision.objects.filter(api_key__name=name).order_by("created_at")
        assert [row.cache_cold for row in rows][1:] == [False] * 3 + [True] + [False] * 3
    assert one_worker[-1] != requests[-1]


def test_a_worker_reads_the_recorded_ledger_only_when_its_own_is_not_the_last_one(
    monkeypatch, caplog
):
    from django.db import OperationalError

    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": []},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
        {"role": "assistant", "content": "", "tool_calls": []},
        {"role": "tool", "tool_call_id": "c2", "content": "y"},
    ]
    mine = Ledger(length=3, at=100.0)  # saved by the request just before: messages[:3]
    theirs = Ledger(length=3, cold=(3,), at=200.0)
    reads = []

    def recorded(key):
        reads.append(key)
        return theirs.as_json()

    store = PrefixProbe("")
    slot = pruning.LedgerSlot(store, "c1", recorded)
    store.save_ledger("c1", mine.as_json())
    assert slot.load(messages) == mine and reads == []
    assert slot.load(messages[:3]) == mine and reads == []  # the request just before, again
    # One request further on, this worker's memory is behind: another served the last one.
    assert slot.load([*messages, {"role": "assistant", "content": "z"}]) == theirs
    assert slot.load(messages[:2]) == theirs  # an edited history: the later of the two
    store.save_ledger("c1", "")
    assert slot.load(messages) == theirs  # nothing in memory
    assert len(reads) == 3

    def broken(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(Conversation.objects, "filter", broken)
    assert (
        RecordedState().read("c1", "pinch_ledger") is None
    )  # rebuilt from the messages, as before
    assert "pinch_ledger_unread reason=OperationalError" in caplog.text


def test_a_failure_in_the_payback_path_sends_the_callers_messages(
    sdk, payback_config, upstream, corpus_dir, monkeypatch, caplog
):
    def broken(*args, **kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr(pruning, "plan", broken)
    messages = session_requests(corpus_dir)[-1]
    with caplog.at_level(logging.WARNING):
        reply = sdk.chat.completions.create(model="echo-hard", messages=messages)
    assert reply.choices[0].message.content
    assert upstream.bodies()[0]["messages"] == messages
    assert "pinch_payback_failed" in caplog.text
    row = RouteDecision.objects.get()
    assert row.pinch_original_tokens == row.pinch_final_tokens


def test_with_pinch_off_the_payload_is_the_callers_byte_for_byte(
    sdk, payback_config, write_config, upstream, corpus_dir
):
    payback_config["pinch"]["enabled"] = False
    write_config(payback_config)
    messages = session_requests(corpus_dir)[-1]
    sdk.chat.completions.create(model="echo-hard", messages=messages)
    assert json.loads(upstream.received[0]["body"])["messages"] == messages
    assert RouteDecision.objects.get().pinch_original_tokens is None


def test_ledgers_are_shared_through_redis_and_a_broken_one_reads_as_absent():
    url = redis_url()
    key = uuid.uuid4().hex
    worker_a, worker_b = PrefixProbe(url), PrefixProbe(url)
    ledger = Ledger(length=12, decided=3, kept=(4,), steps=(9,), digest="ab" * 16)
    worker_a.save_ledger(key, ledger.as_json())
    assert Ledger.from_json(worker_b.load_ledger(key)) == ledger
    worker_a.save_ledger(key, "not a ledger")
    assert Ledger.from_json(worker_b.load_ledger(key)) is None


def test_redis_down_keeps_the_ledger_in_memory(caplog):
    probe = PrefixProbe("redis://127.0.0.1:1/0")
    with caplog.at_level(logging.WARNING):
        probe.save_ledger("k", '[1,0,[],[],"x"]')
        assert probe.load_ledger("k") == '[1,0,[],[],"x"]'
    assert "pinch_ledger_redis_unavailable" in caplog.text


def test_a_conversation_is_sent_alike_whether_the_worker_kept_its_figures_or_not(
    live_server, payback_config, upstream, corpus_dir, monkeypatch
):
    requests = session_requests(corpus_dir)[-8:]

    def serve(name):
        _, raw = create_api_key(name)
        client = openai.OpenAI(base_url=live_server.url + "/v1", api_key=raw, max_retries=0)
        already = len(upstream.bodies())
        for messages in requests:
            client.chat.completions.create(model="echo-hard", messages=messages)
        rows = RouteDecision.objects.filter(api_key__name=name).order_by("id")
        figures = [
            (r.pinch_original_tokens, r.pinch_final_tokens, r.prefix_match, r.measured_tokens)
            for r in rows
        ]
        return upstream.bodies()[already:], figures

    kept = serve("kept")
    monkeypatch.setattr(PrefixProbe, "last_facts", lambda self, key: None)
    assert serve("read afresh") == kept
    assert any(final < original for original, final, _, _ in kept[1])
