"""What a stream's row records when it ends oddly: a client gone early, odd usage, a cut.

Over real sockets: the router's rows for a Messages stream the client leaves
before ``message_delta`` (the tokens it was sent, not the placeholder 1 of
``message_start``), a Responses client over a chat upstream reporting usage
of the wrong types (an answer and a row, not a 500), and a stream cut by a
fault of the router's own mid-relay (recorded as cut, not 200).
"""

import anthropic
import openai
import pytest
import requests

from routing.models import RouteDecision
from tests.support.config import _model

pytestmark = pytest.mark.django_db(transaction=True)

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def router(live_server, api_key, responses_config_data, write_config):
    responses_config_data["models"] += [
        _model("oddusage-medium", "medium", 1.0),
    ]
    write_config(responses_config_data)
    return live_server.url, api_key


def wait_for_row(**filters):
    import time

    for _ in range(100):
        row = RouteDecision.objects.filter(**filters).first()
        if row is not None and row.status_code is not None:
            return row
        time.sleep(0.05)
    raise AssertionError("no row")


@pytest.mark.parametrize("stream", [False, True])
def test_odd_usage_from_a_chat_upstream_answers_a_responses_client_and_leaves_a_row(router, stream):
    url, key = router
    sdk = openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0)

    if stream:
        events = list(sdk.responses.create(model="oddusage-medium", input="hi", stream=True))
        assert events[-1].type == "response.completed"
    else:
        assert sdk.responses.create(model="oddusage-medium", input="hi").output_text

    row = wait_for_row()
    assert row.status_code == 200


def test_a_stream_cut_by_a_fault_mid_relay_is_recorded_as_cut_not_200(router, monkeypatch):
    from routing.protocols.chat import wire

    see, calls = wire.ChatWatcher.see, []

    def faulty(self, event):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("a translation fault")
        return see(self, event)

    monkeypatch.setattr(wire.ChatWatcher, "see", faulty)
    url, key = router
    response = requests.post(
        url + "/v1/chat/completions",
        json={"model": "echo-medium", "messages": HI, "stream": True},
        headers={"Authorization": f"Bearer {key}"},
        timeout=20,
    )
    assert response.status_code == 200  # the stream had started
    assert "[DONE]" not in response.text and '"error"' in response.text

    row = wait_for_row()
    assert row.status_code == 500 and "RuntimeError" in row.error


def test_a_messages_client_gone_before_message_delta_is_charged_what_it_was_sent(
    router, anthropic_upstream
):
    url, key = router
    sdk = anthropic.Anthropic(base_url=url, api_key=key, max_retries=0)
    seen = ""
    with sdk.messages.stream(model="claude-slow", max_tokens=100, messages=HI) as stream:
        for text in stream.text_stream:
            seen += text
            break  # the client leaves after the first text delta

    anthropic_upstream.release.set()
    row = wait_for_row()
    assert row.completion_tokens and row.completion_tokens >= len(seen) // 3 > 1
