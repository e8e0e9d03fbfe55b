"""The hot path's speed budget, in counts: what one warm request may do, and no more.

Issue 42: the added latency stays a small fraction of LiteLLM's only while no
change quietly adds work to every request. Time is too noisy to assert on a
shared machine (bench/bench_stages.py and bench/bench_proxy.py print it);
work is not. A warm request of each protocol, a conversation under way and a
key with limits, may decode JSON twice (the client's body, the upstream's
answer), encode it twice (the upstream body, the client's answer), walk the
client's messages a fixed number of times whatever their count, and run the
database statements of its one write. A change that adds a parse, a walk or a
query fails here, naming which.
"""

import json

import orjson
import pydantic_core
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from routing import jsonio
from routing.limits.settings import set_key_limits
from routing.models import ApiKey
from routing.protocols.chat import inbound

TURNS = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the failing test."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py\n" * 20},
    {"role": "assistant", "content": "Reading a.py."},
    {"role": "user", "content": "Go on."},
]
# One decode of the client's body, one of the upstream's answer.
DECODES = 2
# The upstream body, the client's answer, through routing.jsonio (the request
# path's JSON; the row's JSON columns, the journal line and the prefix probe's
# per-message fingerprints are the write path's and pinch's, not counted here).
ENCODES = 2
# Walks of the client's message list (each a pass over all of it) by planning's
# readers: the conversation's key, the measure (once: the payload's figure too when
# pinch leaves it whole), the turn count, background work (2), pinch, the images
# check (once: cached on the request), the probe's fingerprints, the quality
# signals, the session's user turn, the cache forecast.
WALKS = 11
# The key's budget reserved before the call (routing/limits/ledger.py); then the one
# write: the row, its conversation, its conversation's and its task's quality units (read
# locked, then written: routing/summaries/units.py), the three summary upserts, the
# reservation settled.
STATEMENTS = 9


class Counted(list):
    """The request's messages, counting each walk of them (each ``iter``)."""

    walks = 0

    def __iter__(self):
        Counted.walks += 1
        import sys

        f = sys._getframe(1)
        print("WALK", f.f_code.co_filename.split("/work/h3/")[-1], f.f_code.co_name, f.f_lineno)
        return super().__iter__()


@pytest.fixture
def counting(monkeypatch):
    counts = {"decodes": 0, "encodes": 0}

    def counted(function, kind):
        def call(*args, **kwargs):
            counts[kind] += 1

            return function(*args, **kwargs)

        return call

    monkeypatch.setattr(pydantic_core, "from_json", counted(pydantic_core.from_json, "decodes"))
    monkeypatch.setattr(orjson, "loads", counted(orjson.loads, "decodes"))
    monkeypatch.setattr(jsonio, "dumps", counted(jsonio.dumps, "encodes"))
    to_request = inbound.to_request

    def counted_messages(body, checked):
        body["messages"] = Counted(body["messages"])
        return to_request(body, checked)

    monkeypatch.setattr("routing.protocols.chat.request.to_request", counted_messages)
    return counts


def test_a_warm_request_decodes_encodes_walks_and_queries_within_its_budget(
    router_config, api_key, counting
):
    set_key_limits(ApiKey.objects.get(), {"rpm_limit": 1000, "budget_usd": 50.0})
    client = Client(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    body = json.dumps({"model": "auto", "messages": TURNS})

    def send():
        return client.post("/v1/chat/completions", data=body, content_type="application/json")

    assert send().status_code == 200  # the conversation starts; caches fill
    counting.update(decodes=0, encodes=0)
    Counted.walks = 0
    with CaptureQueriesContext(connection) as captured:
        assert send().status_code == 200
    statements = [
        q["sql"]
        for q in captured.captured_queries
        if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))
    ]

    assert counting["decodes"] == DECODES
    assert counting["encodes"] == ENCODES
    assert Counted.walks == WALKS, f"{Counted.walks} walks of the messages"
    assert len(statements) == STATEMENTS, statements
