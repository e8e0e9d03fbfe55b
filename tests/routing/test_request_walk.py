"""A request passes each stage of the request path once, from the URL to the decision row.

Issue 39: a Messages request used to go back and forth between its parser and
the chat package seven times, the Anthropic client climbed back into the plan
for its cache breakpoints, and the Responses wire edited the plan after it was
made. Here a request of each protocol is walked with ``sys.setprofile``: each
Python call records the stage it enters (tests/support/walk.py says which
modules are stages and which are shared values and libraries), and no stage
may be entered again once control has left it.
"""

import json

import pytest
from django.test import Client

from routing.models import RouteDecision
from tests.support.walk import walked

HI = [{"role": "user", "content": "hi"}]
BODIES = {
    "chat": ("/v1/chat/completions", {"model": "echo-medium", "messages": HI}),
    "messages": ("/v1/messages", {"model": "echo-medium", "max_tokens": 64, "messages": HI}),
    "responses": ("/v1/responses", {"model": "echo-medium", "input": "hi", "store": False}),
}
CLAUDE = ("/v1/messages", {"model": "claude-echo", "max_tokens": 64, "messages": HI})


def walk(api_key, path, body):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {api_key}")

    def send():
        return client.post(path, data=json.dumps(body), content_type="application/json")

    assert send().status_code == 200  # warm: the config, the key, the providers
    response, entered, again = walked(send)
    assert response.status_code == 200, response.content[:300]
    return entered, again


@pytest.mark.parametrize("protocol", sorted(BODIES))
def test_a_request_enters_each_stage_once_from_the_url_to_its_row(router_config, api_key, protocol):
    entered, again = walk(api_key, *BODIES[protocol])

    assert again == [], f"entered again after leaving: {again}; the walk: {entered}"
    in_order = [
        "routing.views",
        f"routing.protocols.{protocol}.request",
        "routing.completion",
        "routing.pipeline",
        "routing.dispatch",
        "routing.providers.openai",
    ]
    assert [stage for stage in entered if stage in in_order] == in_order
    assert RouteDecision.objects.count() == 2


def test_a_claude_request_sent_natively_enters_each_stage_once(claude_config, api_key):
    entered, again = walk(api_key, *CLAUDE)

    assert again == [], f"entered again after leaving: {again}; the walk: {entered}"
    assert "routing.providers.anthropic" in entered
    assert "routing.protocols.messages.translated" not in entered
