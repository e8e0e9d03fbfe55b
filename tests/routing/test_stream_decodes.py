"""Every streamed event is JSON-decoded once on its way through the router, on every path.

How it is measured: the events the router reads from the upstream are
counted where the SSE buffer cuts them (routing.providers.sse), and every
``json.loads`` and ``orjson.loads`` made by router code (a caller in
routing/ or pinch/; the json fallback inside routing.jsonio is the same
decode) is counted while a streamed request runs, over real sockets, from
the client protocol to the upstream of each path. Translated paths make
their own events from the parsed ones and serialise them once, when sent.
"""

import json
import sys
import threading

import orjson
import pytest
import requests

from routing.providers import sse
from tests.support.config import (
    ANTHROPIC_KEY,
    ANTHROPIC_KEY_ENV,
    PROVIDER_KEY,
    PROVIDER_KEY_ENV,
    responses_config,
)

pytestmark = pytest.mark.django_db(transaction=True)

ROUTER_CODE = ("routing.", "pinch.")
# Per-request state, not an event: the conversation's pinch ledger is read once a request.
NOT_EVENTS = ("routing.jsonio", "pinch.ledger")
# The client's request body, read once a request (by orjson first: routing.jsonio).
BODY_READER = "loads_request"

BODIES = {
    "/v1/chat/completions": lambda model: {
        "model": model,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
    },
    "/v1/messages": lambda model: {
        "model": model,
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
    },
    "/v1/responses": lambda model: {"model": model, "input": "hi", "stream": True},
}

PATHS = [
    ("/v1/chat/completions", "echo-medium"),  # relayed as it came
    ("/v1/chat/completions", "claude-echo"),  # Anthropic events -> chat chunks
    ("/v1/messages", "claude-echo"),  # native
    ("/v1/messages", "echo-medium"),  # chat chunks -> Messages events
    ("/v1/responses", "echo-medium"),  # chat chunks -> Responses events
    ("/v1/responses", "claude-echo"),  # Anthropic events -> chat chunks -> Responses events
    ("/v1/responses", "native-echo"),  # native
]


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.decodes = 0
        self.events = 0

    def add(self, name: str, n: int = 1):
        with self.lock:
            setattr(self, name, getattr(self, name) + n)


@pytest.fixture
def counts(monkeypatch):
    counted = Counts()
    plain_loads, fast_loads, feed = json.loads, orjson.loads, sse.SseBuffer.feed

    def caller() -> str:
        return sys._getframe(2).f_globals.get("__name__", "")

    def counted_json(*args, **kwargs):
        name = caller()
        if name.startswith(ROUTER_CODE) and name not in NOT_EVENTS:
            counted.add("decodes")
        return plain_loads(*args, **kwargs)

    def counted_orjson(data):
        body = sys._getframe(1).f_code.co_name == BODY_READER
        if caller().startswith(ROUTER_CODE) and not body:
            counted.add("decodes")
        return fast_loads(data)

    def counted_feed(self, chunk):
        events = feed(self, chunk)
        counted.add("events", len([e for e in events if e != b"data: [DONE]"]))
        return events

    monkeypatch.setattr(json, "loads", counted_json)
    monkeypatch.setattr(orjson, "loads", counted_orjson)
    monkeypatch.setattr(sse.SseBuffer, "feed", counted_feed)
    return counted


@pytest.fixture
def router(live_server, upstream, anthropic_upstream, write_config, monkeypatch, api_key):
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, ANTHROPIC_KEY)
    write_config(responses_config(anthropic_upstream.base_url, upstream.base_url))
    return live_server.url, api_key


@pytest.mark.parametrize("path, model", PATHS)
def test_each_streamed_event_is_decoded_once(router, counts, path, model):
    url, key = router
    # Warm up (config, models, caches) so the count is one request's stream alone.
    requests.post(
        url + path,
        json={**BODIES[path](model), "stream": False},
        timeout=20,
        headers={"Authorization": f"Bearer {key}"},
    )
    counts.decodes = counts.events = 0

    response = requests.post(
        url + path,
        json=BODIES[path](model),
        headers={"Authorization": f"Bearer {key}"},
        timeout=20,
    )

    assert response.status_code == 200, response.text
    assert response.content  # read to the end
    assert counts.events > 2
    assert counts.decodes == counts.events
