"""The hot path's speed budget, in counts: what one warm request may do, and no more.

Issue 42: the added latency stays a small fraction of LiteLLM's only while no
change quietly adds work to every request. Time is too noisy to assert on a
shared machine (bench/bench_stages.py and bench/bench_proxy.py print it);
work is not. A warm request of each protocol, a conversation under way and a
key with limits, may decode JSON twice (the client's body, the upstream's
answer), encode it twice (the upstream body, the client's answer), walk the
client's messages a fixed number of times whatever their count, and run the
database statements of its one write, and leave none of its objects in a
reference cycle (those wait for the garbage collector, whose full passes then
stop every thread of the worker). A change that adds a parse, a walk, a query
or a cycle fails here, naming which.
"""

import gc
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
# readers: the conversation's key, the identity of each message (pinch.carry: one pass
# in C over it and the previous request's list, two walks; the measure, the ledger's
# hashes and the probe's fingerprints of the payload read only the messages the
# conversation's previous request and payload did not send, and walk none), the
# session's user turn; and pinch's: the budget prune's one pass, or the payback plan's
# (the recall handles; the roles, tokens, hashes and calls it reads are the facts').
# The turn count, background work, the task's start and the quality signals read the
# facts' roles and user turns (routing.task_text.task_start), the cache forecast the
# payload's carried tokens, and walk none; nor does the images check when no message's
# content is a list of parts (the parse counted them: ChatRequest.has_parts).
WALKS = {"budget prune": 5, "payback and recall": 5}
# The key's budget reserved before the call (routing/limits/ledger.py); then the one
# write: the row, its conversation, its conversation's and its task's quality units (read
# locked, then written: routing/summaries/units.py), the three summary upserts, the
# reservation settled.
# No read: the conversation's state, and what recalls taught pinch
# (routing.recall.store.restored), are in the worker's memory while it served the
# request before.
STATEMENTS = 9
# A conversation's first request: the same, and the read of what its row says of its state
# (no worker has served it yet), its row inserted after an UPDATE that found none, its
# units created by an insert that returns them, so that they need no second read
# (routing/summaries/units.py).
FIRST_STATEMENTS = STATEMENTS + 3
# A stream's: the client's body, then each of the upstream's events once (those relayed,
# and the usage chunk the router asked for, not relayed), none encoded again (an event
# nobody changed leaves as the bytes that came in); the upstream body is encoded once.
STREAM_ENCODES = 1
# The router's own modules, whose objects a request must leave to reference counting.
OURS = ("pinch.", "routing.")

# The pinch settings of each case: the tests' own (the budget prune, no recall
# tool) and the shipped defaults' payback steps with the recall tool.
PINCH = {
    "budget prune": {},
    "payback and recall": {"payback": {"enabled": True}, "recall": {"enabled": True}},
}


class Counted(list):
    """The request's messages, counting each walk of them (each ``iter``)."""

    walks = 0

    def __iter__(self):
        Counted.walks += 1
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

    def counted_messages(body, checked, parts):
        body["messages"] = Counted(body["messages"])
        return to_request(body, checked, parts)

    monkeypatch.setattr("routing.protocols.chat.request.to_request", counted_messages)
    return counts


@pytest.fixture
def warm(router_config, write_config, api_key, counting):
    """send(case, stream=False): the request of a conversation under way, warm, counted."""
    set_key_limits(ApiKey.objects.get(), {"rpm_limit": 1000, "budget_usd": 50.0})
    client = Client(HTTP_AUTHORIZATION=f"Bearer {api_key}")

    def send(case, stream=False, counted=TURNS):
        router_config["pinch"].update(PINCH[case])
        write_config(router_config)

        def post(turns=TURNS):
            body = json.dumps({"model": "auto", "messages": turns, "stream": stream})
            response = client.post(
                "/v1/chat/completions", data=body, content_type="application/json"
            )
            assert response.status_code == 200
            return b"".join(response.streaming_content) if stream else response.content

        post()  # the conversation starts; caches fill
        counting.update(decodes=0, encodes=0)
        Counted.walks = 0
        with CaptureQueriesContext(connection) as captured:
            content = post(counted)
        statements = [
            q["sql"]
            for q in captured.captured_queries
            if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))
        ]
        return statements, content

    return send


@pytest.mark.parametrize("case", list(PINCH))
def test_a_warm_request_decodes_encodes_walks_and_queries_within_its_budget(warm, counting, case):
    statements, _ = warm(case)

    assert counting["decodes"] == DECODES
    assert counting["encodes"] == ENCODES
    assert Counted.walks == WALKS[case], f"{Counted.walks} walks of the messages"
    assert len(statements) == STATEMENTS, statements


def test_a_conversation_first_request_queries_within_its_budget(warm):
    other = [{**TURNS[0]}, {"role": "user", "content": "Another task altogether."}]
    statements, _ = warm("budget prune", counted=other)

    assert len(statements) == FIRST_STATEMENTS, [s[:70] for s in statements]


def test_a_warm_stream_decodes_each_event_once_and_queries_as_a_plain_request(warm, counting):
    statements, content = warm("payback and recall", stream=True)

    relayed = content.count(b"data: {")
    assert relayed >= 3  # the role, the text, the finish
    assert counting["decodes"] == 1 + relayed + 1
    assert counting["encodes"] == STREAM_ENCODES
    assert Counted.walks == WALKS["payback and recall"], f"{Counted.walks} walks"
    assert len(statements) == STATEMENTS, statements


@pytest.mark.parametrize("case", list(PINCH))
def test_a_warm_request_leaves_none_of_the_routers_objects_to_the_cycle_collector(warm, case):
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a pass finds unreachable is kept here to be named
    try:
        warm(case)
        gc.collect()
        cyclic = sorted(
            {type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith(OURS)}
        )
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()

    assert cyclic == []
