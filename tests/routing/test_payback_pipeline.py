"""The payback steps in the request path: real requests, the ledger in the store, fail-closed."""

import json
import logging
import uuid

import openai
import pytest

from pinch.payback import Ledger
from routing import pruning
from routing.models import RouteDecision
from routing.prefix_probe import PrefixProbe
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
    # Another worker: nothing in its store, so it rebuilds the decisions.
    monkeypatch.setattr(pruning.LedgerSlot, "load", lambda slot: None)
    messages = requests[-1]
    sdk.chat.completions.create(model="echo-hard", messages=messages)
    *_, first, second = upstream.bodies()
    assert first["messages"] == second["messages"]
    assert first["messages"] != messages


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
