"""End to end: the official openai SDK -> the router over real HTTP -> a local upstream."""

import json
import threading
import time

import pytest

from routing.models import RouteDecision
from tests.support.config import PROVIDER_KEY
from tests.support.openai_upstream import ANSWER
from tests.support.router import only_decision, openai_client

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(live_server, router_config, api_key):
    return openai_client(live_server, api_key)


def test_plain_answer_comes_back_and_is_recorded(sdk, upstream):
    reply = sdk.chat.completions.create(
        model="echo-medium", messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.choices[0].message.content == ANSWER
    decision = only_decision()
    assert decision.path == "passthrough"
    assert decision.chosen_model == "echo-medium"
    assert decision.status_code == 200
    assert (decision.prompt_tokens, decision.completion_tokens, decision.cached_tokens) == (
        11,
        7,
        3,
    )
    assert decision.usage_estimated is False
    assert decision.upstream_latency_ms is not None
    assert decision.attempts == [
        {"model": "echo-medium", "result": "ok", "status": 200, "ms": decision.attempts[0]["ms"]}
    ]


def test_upstream_gets_the_provider_key_never_the_router_key(sdk, upstream, api_key):
    sdk.chat.completions.create(model="echo-medium", messages=[{"role": "user", "content": "hi"}])
    (request,) = upstream.received
    assert request["headers"]["Authorization"] == f"Bearer {PROVIDER_KEY}"
    assert api_key.encode() not in request["body"]
    assert api_key not in json.dumps(request["headers"])


def test_streamed_answer_arrives_chunk_by_chunk(sdk, upstream):
    stream = sdk.chat.completions.create(
        model="echo-medium", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text.strip() == ANSWER
    decision = only_decision()
    assert decision.stream is True
    assert decision.status_code == 200
    # The router asked for usage on the caller's behalf and recorded it.
    assert (decision.prompt_tokens, decision.completion_tokens) == (11, 7)
    assert upstream.bodies()[0]["stream_options"] == {"include_usage": True}


def test_usage_chunk_is_hidden_unless_the_caller_asked_for_it(sdk):
    plain = list(
        sdk.chat.completions.create(
            model="echo-medium", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    assert all(chunk.usage is None for chunk in plain)
    assert all(chunk.choices for chunk in plain)
    asked = list(
        sdk.chat.completions.create(
            model="echo-medium",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert asked[-1].usage.total_tokens == 18
    assert asked[-1].choices == []


def test_first_chunk_reaches_the_client_before_the_upstream_finishes(sdk, upstream):
    stream = sdk.chat.completions.create(
        model="slow-stream", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    first = next(iter(stream))
    # The upstream is still holding the rest of its answer back.
    assert first.choices[0].delta.role == "assistant"
    assert not upstream.stream_finished.is_set()
    upstream.release.set()
    rest = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert rest.strip() == ANSWER
    assert upstream.stream_finished.wait(timeout=5)  # set just after its last bytes went out


def test_estimated_usage_is_marked_when_the_upstream_reports_none(sdk):
    list(
        sdk.chat.completions.create(
            model="nousage-model", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    decision = only_decision()
    assert decision.usage_estimated is True
    assert decision.completion_tokens == len(ANSWER + " ") // 3


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def test_tool_calls_pass_through_plain_and_streamed(sdk, upstream):
    reply = sdk.chat.completions.create(
        model="echo-medium", messages=[{"role": "user", "content": "read it"}], tools=TOOLS
    )
    call = reply.choices[0].message.tool_calls[0]
    assert (call.function.name, call.function.arguments) == ("read_file", '{"path": "README.md"}')
    chunks = list(
        sdk.chat.completions.create(
            model="echo-medium",
            messages=[{"role": "user", "content": "read it"}],
            tools=TOOLS,
            stream=True,
        )
    )
    arguments = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments or ""
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
    )
    assert arguments == '{"path": "README.md"}'
    assert upstream.bodies()[0]["tools"] == TOOLS


def test_images_json_mode_and_unknown_fields_reach_the_upstream_unchanged(sdk, upstream):
    image = [
        {"type": "text", "text": "what is this"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]
    sdk.chat.completions.create(
        model="echo-medium",
        messages=[{"role": "user", "content": image}],
        response_format={"type": "json_object"},
        extra_body={"seed_of_tomorrow": {"x": 1}},
        temperature=0.25,
    )
    body = upstream.bodies()[0]
    assert body["messages"][0]["content"] == image
    assert body["response_format"] == {"type": "json_object"}
    assert body["seed_of_tomorrow"] == {"x": 1}
    assert body["temperature"] == 0.25


def test_auto_goes_to_the_cheapest_model_of_the_classified_tier(sdk, upstream):
    reply = sdk.chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": "hi there"}]
    )
    assert reply.headers["X-Router-Model"] == "echo-small"
    assert reply.headers["X-Router-Tier"] == "easy"
    decision = only_decision()
    assert (decision.path, decision.tier, decision.classifier) == ("routed", "easy", "heuristic")
    assert upstream.bodies()[0]["model"] == "echo-small"


def test_models_lists_auto_and_the_registry(sdk):
    ids = [m.id for m in sdk.models.list()]
    assert ids[0] == "auto"
    assert "echo-medium" in ids and "echo-hard" in ids


def test_a_retryable_failure_is_retried_once_on_the_same_model(
    live_server, router_config, write_config, api_key, upstream
):
    router_config["models"].append(
        {
            "id": "flaky",
            "provider": "up",
            "upstream_model": "fail-503-1-flaky",
            "tier": "medium",
            "context_window": 32768,
            "capabilities": ["tools"],
        }
    )
    write_config(router_config)
    sdk = openai_client(live_server, api_key)
    reply = sdk.chat.completions.create(model="flaky", messages=[{"role": "user", "content": "x"}])
    assert reply.choices[0].message.content == ANSWER
    decision = only_decision()
    assert [(a["model"], a["result"], a["status"]) for a in decision.attempts] == [
        ("flaky", "status", 503),
        ("flaky", "ok", 200),
    ]


def test_routed_request_falls_back_to_the_next_candidate(
    live_server, router_config, write_config, api_key, upstream
):
    # The cheapest easy model always fails: after one retry the router moves on.
    router_config["models"].insert(
        0,
        {
            "id": "broken-cheap",
            "provider": "up",
            "upstream_model": "fail-500-99-cheap",
            "tier": "easy",
            "context_window": 32768,
            "prompt_price": 0.01,
            "capabilities": ["tools"],
        },
    )
    write_config(router_config)
    sdk = openai_client(live_server, api_key)
    reply = sdk.chat.completions.create(model="auto", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == ANSWER
    decision = only_decision()
    assert decision.chosen_model == "echo-small"
    assert [(a["model"], a["status"]) for a in decision.attempts] == [
        ("broken-cheap", 500),
        ("broken-cheap", 500),
        ("echo-small", 200),
    ]


def test_a_stream_is_retried_while_nothing_reached_the_client(
    live_server, router_config, write_config, api_key, upstream
):
    router_config["models"].append(
        {
            "id": "flaky",
            "provider": "up",
            "upstream_model": "fail-502-1-flaky",
            "tier": "medium",
            "context_window": 32768,
        }
    )
    write_config(router_config)
    sdk = openai_client(live_server, api_key)
    chunks = list(
        sdk.chat.completions.create(
            model="flaky", messages=[{"role": "user", "content": "x"}], stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).strip() == ANSWER
    assert [a["status"] for a in only_decision().attempts] == [502, 200]


def test_concurrent_streams_are_all_recorded(sdk):
    errors = []

    def one():
        try:
            list(
                sdk.chat.completions.create(
                    model="echo-medium", messages=[{"role": "user", "content": "hi"}], stream=True
                )
            )
        except Exception as error:  # collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    deadline = time.monotonic() + 5
    while RouteDecision.objects.filter(status_code=200).count() < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert RouteDecision.objects.filter(status_code=200, stream=True).count() == 6


def test_a_stream_that_breaks_mid_answer_ends_with_an_error_event(
    live_server, router_config, write_config, api_key, upstream
):
    import requests

    router_config["models"].append(
        {
            "id": "breaking",
            "provider": "up",
            "upstream_model": "breaks-x",
            "tier": "medium",
            "context_window": 32768,
        }
    )
    write_config(router_config)
    response = requests.post(
        live_server.url + "/v1/chat/completions",
        timeout=20,
        stream=True,
        headers={"Authorization": f"Bearer {api_key}"},
        json={"model": "breaking", "messages": [{"role": "user", "content": "x"}], "stream": True},
    )
    events = [e for e in response.content.split(b"\n\n") if e]
    assert response.status_code == 200
    assert json.loads(events[0][len(b"data: ") :])["choices"][0]["delta"]["role"] == "assistant"
    last = json.loads(events[-1][len(b"data: ") :])
    assert last["error"]["code"] == "upstream_stream_broken"
    decision = only_decision()
    assert "stream broke" in decision.error
