"""End to end: the openai SDK -> the router over real HTTP -> a Claude model on the Anthropic fake.

The caller speaks chat completions only; what reaches the fake is checked
against the Messages API (by the fake itself, with the anthropic SDK's types)
and what comes back must look like what an OpenAI-compatible model answers.
"""

import json
import time

import openai
import pytest
import requests

from routing.models import RouteDecision
from tests.support.anthropic_upstream import ANSWER, THOUGHT
from tests.support.config import (
    ANTHROPIC_KEY,
    ANTHROPIC_KEY_ENV,
    claude_model,
)
from tests.support.openai_upstream import ANSWER as OPENAI_ANSWER
from tests.support.router import only_decision, openai_client

pytestmark = pytest.mark.django_db(transaction=True)

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
HI = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]


@pytest.fixture
def sdk(live_server, claude_config, api_key):
    return openai_client(live_server, api_key)


def messages_body(fake, n=-1):
    return fake.bodies()[n]


def tool_arguments(chunks):
    calls = {}
    for chunk in chunks:
        for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            entry = calls.setdefault(call.index, {"id": None, "name": None, "arguments": ""})
            entry["id"] = call.id or entry["id"]
            if call.function and call.function.name:
                entry["name"] = call.function.name
            entry["arguments"] += (call.function.arguments or "") if call.function else ""
    return calls


def test_plain_answer_comes_back_as_a_chat_completion_and_is_recorded(sdk, anthropic_upstream):
    reply = sdk.chat.completions.create(model="claude-echo", messages=HI)
    assert reply.object == "chat.completion"
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content == ANSWER
    assert reply.choices[0].finish_reason == "stop"
    usage = anthropic_upstream.usages[0]
    assert reply.usage.prompt_tokens == usage["input_tokens"]
    assert reply.usage.completion_tokens > 0
    decision = only_decision()
    assert (decision.status_code, decision.provider, decision.chosen_model) == (
        200,
        "claude",
        "claude-echo",
    )
    assert decision.prompt_tokens == reply.usage.prompt_tokens
    assert decision.usage_estimated is False
    (request,) = anthropic_upstream.received
    assert request["path"] == "/v1/messages"
    assert request["headers"]["x-api-key"] == ANTHROPIC_KEY
    assert request["headers"]["anthropic-version"] == "2026-10-21"
    assert request["headers"]["anthropic-beta"] == "test-beta-2026-01-01"
    assert "Authorization" not in request["headers"]
    body = messages_body(anthropic_upstream)
    assert body["system"] == [{"type": "text", "text": "Be brief."}]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert body["max_tokens"] == 4096  # the documented default when the client names none


def test_a_model_default_max_tokens_and_the_clients_own_are_sent(
    live_server, claude_config, write_config, api_key, anthropic_upstream
):
    claude_config["models"].append(claude_model("claude-capped", default_max_tokens=1234))
    write_config(claude_config)
    sdk = openai_client(live_server, api_key)
    sdk.chat.completions.create(model="claude-capped", messages=HI)
    sdk.chat.completions.create(model="claude-capped", messages=HI, max_completion_tokens=77)
    assert [b["max_tokens"] for b in anthropic_upstream.bodies()] == [1234, 77]


def shape(value):
    """The structure an SDK user's code depends on: keys and value types, not values."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [shape(v) for v in value[:1]]
    return type(value).__name__


def test_a_claude_model_answers_in_the_same_shapes_as_an_openai_compatible_one(sdk):
    for tools in (None, TOOLS):
        extra = {"tools": tools} if tools else {}
        plain = {
            model: sdk.chat.completions.create(
                model=model, messages=[{"role": "user", "content": "read it"}], **extra
            )
            for model in ("echo-medium", "claude-echo")
        }
        assert shape(plain["claude-echo"].choices[0].model_dump()) == shape(
            plain["echo-medium"].choices[0].model_dump()
        )
        streamed = {
            model: list(
                sdk.chat.completions.create(
                    model=model,
                    messages=[{"role": "user", "content": "read it"}],
                    stream=True,
                    stream_options={"include_usage": True},
                    **extra,
                )
            )
            for model in ("echo-medium", "claude-echo")
        }
        for model, chunks in streamed.items():
            assert chunks[0].choices[0].delta.role == "assistant", model
            assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0, model
            finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
            assert finishes[-1] == ("tool_calls" if tools else "stop"), model
            assert all(f is None for f in finishes[:-1]), model
            if tools:
                (call,) = tool_arguments(chunks).values()
                assert call["name"] == "read_file" and call["id"], model
                assert json.loads(call["arguments"]) == {"path": "README.md"}, model
            else:
                text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
                assert text.strip() == (ANSWER if model == "claude-echo" else OPENAI_ANSWER)


def test_streamed_text_reaches_the_client_before_the_upstream_finishes(sdk, anthropic_upstream):
    stream = sdk.chat.completions.create(model="claude-slow", messages=HI, stream=True)
    chunks = iter(stream)
    assert next(chunks).choices[0].delta.role == "assistant"
    first_text = next(chunks).choices[0].delta.content
    # The fake holds the rest of its answer until released.
    assert first_text == ANSWER.split(" ")[0] + " "
    assert not anthropic_upstream.stream_finished.is_set()
    anthropic_upstream.release.set()
    rest = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert first_text + rest == ANSWER
    decision = only_decision()
    assert decision.stream is True and decision.status_code == 200
    assert decision.prompt_tokens == anthropic_upstream.usages[0]["input_tokens"]


def streamed_tool_calls(sdk, model):
    return list(
        sdk.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": "read it"}],
            tools=TOOLS,
            stream=True,
        )
    )


def test_streamed_tool_use_arrives_as_partial_json_under_its_index(sdk):
    chunks = streamed_tool_calls(sdk, "claude-echo")
    pieces = [
        c.choices[0].delta.tool_calls[0]
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
    ]
    assert pieces[0].id.startswith("toolu_") and pieces[0].function.name == "read_file"
    assert len(pieces) > 3  # the arguments came in several pieces, as the fake sent them
    assert {p.index for p in pieces} == {0}
    assert json.loads("".join(p.function.arguments or "" for p in pieces)) == {"path": "README.md"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_parallel_tool_calls_keep_their_ids_plain_and_streamed(sdk):
    reply = sdk.chat.completions.create(
        model="claude-parallel", messages=[{"role": "user", "content": "read both"}], tools=TOOLS
    )
    calls = reply.choices[0].message.tool_calls
    assert [json.loads(c.function.arguments)["path"] for c in calls] == ["a.py", "b.py"]
    assert len({c.id for c in calls}) == 2 and all(c.id.startswith("toolu_") for c in calls)
    assert reply.choices[0].finish_reason == "tool_calls"
    streamed = tool_arguments(streamed_tool_calls(sdk, "claude-parallel"))
    assert sorted(streamed) == [0, 1]
    assert [json.loads(streamed[i]["arguments"])["path"] for i in (0, 1)] == ["a.py", "b.py"]


def test_tool_results_map_back_to_their_tool_use_ids_over_three_turns(sdk, anthropic_upstream):
    history = [{"role": "user", "content": "read both files"}]
    first = sdk.chat.completions.create(model="claude-parallel", messages=history, tools=TOOLS)
    calls = first.choices[0].message.tool_calls
    history.append(first.choices[0].message.model_dump(exclude_none=True))
    history.append({"role": "tool", "tool_call_id": calls[0].id, "content": "print('a')"})
    history.append(
        {"role": "tool", "tool_call_id": calls[1].id, "content": "No such file", "is_error": True}
    )
    second = sdk.chat.completions.create(model="claude-parallel", messages=history, tools=TOOLS)
    assert second.choices[0].message.content == f"Got 2 results: {calls[0].id}, {calls[1].id}"
    body = messages_body(anthropic_upstream)
    assert [turn["role"] for turn in body["messages"]] == ["user", "assistant", "user"]
    assert [b["id"] for b in body["messages"][1]["content"]] == [calls[0].id, calls[1].id]
    # Both results in the one user turn that follows, the failed one marked.
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": calls[0].id, "content": "print('a')"},
        {
            "type": "tool_result",
            "tool_use_id": calls[1].id,
            "content": "No such file",
            "is_error": True,
        },
    ]
    history.append(second.choices[0].message.model_dump(exclude_none=True))
    history.append({"role": "user", "content": "thanks, now just say hi"})
    third = sdk.chat.completions.create(model="claude-parallel", messages=history)
    assert third.choices[0].message.content == ANSWER
    body = messages_body(anthropic_upstream)
    assert [turn["role"] for turn in body["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    # No tools offered any more: the history's stand in (the API wants tools defined
    # beside tool blocks), and the model may not call them.
    assert [t["name"] for t in body["tools"]] == ["read_file"]
    assert body["tool_choice"] == {"type": "none"}


def test_images_go_up_as_base64_and_url_sources(sdk, anthropic_upstream):
    sdk.chat.completions.create(
        model="claude-echo",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what are these"},
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
                    },
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
                ],
            }
        ],
    )
    assert messages_body(anthropic_upstream)["messages"][0]["content"] == [
        {"type": "text", "text": "what are these"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
    ]


def test_reasoning_effort_turns_on_thinking_returned_as_reasoning_content(sdk, anthropic_upstream):
    reply = sdk.chat.completions.create(
        model="claude-echo", messages=HI, reasoning_effort="low", temperature=0.2
    )
    message = reply.choices[0].message
    assert message.content == ANSWER
    assert message.model_extra["reasoning_content"] == THOUGHT
    body = messages_body(anthropic_upstream)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "temperature" not in body  # thinking refuses it upstream
    chunks = list(
        sdk.chat.completions.create(
            model="claude-echo", messages=HI, reasoning_effort="low", stream=True
        )
    )
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    reasoning = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)
    assert reasoning == THOUGHT
    assert "".join(d.content or "" for d in deltas) == ANSWER


def test_thinking_blocks_go_back_signed_before_the_tool_results(sdk, anthropic_upstream):
    history = [{"role": "user", "content": "read it"}]
    first = sdk.chat.completions.create(
        model="claude-echo", messages=history, tools=TOOLS, reasoning_effort="low"
    )
    message = first.choices[0].message
    assert message.model_extra["thinking_blocks"] == [
        {"type": "thinking", "thinking": THOUGHT, "signature": "sig-test"}
    ]
    history.append(message.model_dump(exclude_none=True))
    history.append(
        {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "# README"}
    )
    second = sdk.chat.completions.create(
        model="claude-echo", messages=history, tools=TOOLS, reasoning_effort="low"
    )
    assert second.choices[0].message.content.startswith("Got 1 results")
    assistant = messages_body(anthropic_upstream)["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": THOUGHT, "signature": "sig-test"}
    assert assistant[1]["type"] == "tool_use"
    # Streamed, the finished block comes whole, for a client to keep.
    chunks = list(
        sdk.chat.completions.create(
            model="claude-echo", messages=HI, reasoning_effort="low", stream=True
        )
    )
    blocks = [
        block
        for c in chunks
        if c.choices
        for block in (c.choices[0].delta.model_extra or {}).get("thinking_blocks") or ()
    ]
    assert blocks == [{"type": "thinking", "thinking": THOUGHT, "signature": "sig-test"}]


def test_options_tool_choice_and_json_schema_are_translated(sdk, anthropic_upstream):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    sdk.chat.completions.create(
        model="claude-echo",
        messages=HI,
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "read_file"}},
        parallel_tool_calls=False,
        temperature=0.3,
        stop=["END"],
        user="user-42",
        max_tokens=100,
        response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": schema}},
    )
    body = messages_body(anthropic_upstream)
    assert body["tool_choice"] == {
        "type": "tool",
        "name": "read_file",
        "disable_parallel_tool_use": True,
    }
    assert body["tools"] == [
        {
            "name": "read_file",
            "description": "Read a file",
            "input_schema": TOOLS[0]["function"]["parameters"],
        }
    ]
    assert body["stop_sequences"] == ["END"]
    assert "temperature" not in body  # anthropic-version 2026-10-21 refuses it
    assert body["metadata"] == {"user_id": "user-42"}
    assert body["max_tokens"] == 100
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    for choice, expected in (("required", {"type": "any"}), ("none", {"type": "none"})):
        sdk.chat.completions.create(
            model="claude-echo", messages=HI, tools=TOOLS, tool_choice=choice
        )
        assert messages_body(anthropic_upstream)["tool_choice"] == expected


def test_sampling_parameters_are_sent_under_an_older_anthropic_version(
    live_server, claude_config, write_config, api_key, anthropic_upstream
):
    claude_config["providers"]["claude"]["anthropic_version"] = "2023-06-01"
    write_config(claude_config)
    sdk = openai_client(live_server, api_key)
    sdk.chat.completions.create(model="claude-echo", messages=HI, temperature=0.3, top_p=0.9)
    body = messages_body(anthropic_upstream)
    assert (body["temperature"], body["top_p"]) == (0.3, 0.9)
    assert anthropic_upstream.received[0]["headers"]["anthropic-version"] == "2023-06-01"


def test_json_output_on_a_claude_model_without_it_is_refused_with_422_and_no_row(sdk):
    with pytest.raises(openai.UnprocessableEntityError):
        sdk.chat.completions.create(
            model="claude-text-only",
            messages=HI,
            response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": {}}},
        )
    assert RouteDecision.objects.count() == 0


def test_what_the_messages_api_cannot_express_is_a_400_naming_it(sdk, anthropic_upstream):
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.chat.completions.create(
            model="claude-echo", messages=HI, response_format={"type": "json_object"}
        )
    assert caught.value.body["param"] == "response_format"
    assert "json_schema" in caught.value.body["message"]
    assert anthropic_upstream.received == []
    assert only_decision().status_code == 400


def test_a_refusal_finishes_with_content_filter(sdk):
    reply = sdk.chat.completions.create(model="claude-refuse", messages=HI)
    assert reply.choices[0].finish_reason == "content_filter"


ERRORS = {
    400: (openai.BadRequestError, "invalid_request_error", 1),
    404: (openai.NotFoundError, "not_found_error", 1),
    413: (openai.APIStatusError, "request_too_large", 1),
    429: (openai.RateLimitError, "rate_limit_error", 2),
    500: (openai.InternalServerError, "api_error", 2),
    529: (openai.InternalServerError, "overloaded_error", 2),
}


@pytest.mark.parametrize("status", sorted(ERRORS))
def test_each_anthropic_error_comes_back_in_the_openai_shape_with_its_status(
    status, live_server, claude_config, write_config, api_key, anthropic_upstream
):
    error_class, anthropic_type, tries = ERRORS[status]
    claude_config["models"].append(claude_model("failing", upstream=f"claude-fail-{status}-9"))
    write_config(claude_config)
    sdk = openai_client(live_server, api_key)
    with pytest.raises(error_class) as caught:
        sdk.chat.completions.create(model="failing", messages=HI)
    assert caught.value.status_code == status
    assert caught.value.body["code"] == anthropic_type
    assert caught.value.body["message"] == f"scripted {status}"
    assert ANTHROPIC_KEY not in json.dumps(caught.value.body)
    decision = only_decision()
    assert decision.status_code == status
    assert [a["status"] for a in decision.attempts] == [status] * tries


@pytest.mark.parametrize("status", [401, 403])
def test_claude_refusing_the_routers_key_names_the_provider_and_its_variable(
    status, live_server, claude_config, write_config, api_key, anthropic_upstream
):
    claude_config["models"].append(claude_model("failing", upstream=f"claude-fail-{status}-9"))
    write_config(claude_config)
    sdk = openai_client(live_server, api_key)
    # Not the 401/403 that would read as the client's own router key refused, nor a 5xx
    # the client would retry: only the operator can mend it.
    with pytest.raises(openai.APIStatusError) as caught:
        sdk.chat.completions.create(model="failing", messages=HI)
    assert caught.value.status_code == 400
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert caught.value.body["code"] == "provider_key_rejected"
    message = caught.value.body["message"]
    assert message.startswith(f"Provider 'claude' refused the key in {ANTHROPIC_KEY_ENV} (HTTP ")
    assert f"{status}: scripted {status})" in message
    assert ANTHROPIC_KEY not in json.dumps(caught.value.body)
    decision = only_decision()
    assert decision.status_code == 400
    assert [a["status"] for a in decision.attempts] == [status]


def test_a_529_is_retried_on_the_same_claude_model(
    live_server, claude_config, write_config, api_key, anthropic_upstream
):
    claude_config["models"].append(claude_model("flaky", upstream="claude-fail-529-1-x"))
    write_config(claude_config)
    sdk = openai_client(live_server, api_key)
    reply = sdk.chat.completions.create(model="flaky", messages=HI)
    assert reply.choices[0].message.content == ANSWER
    assert [(a["model"], a["status"]) for a in only_decision().attempts] == [
        ("flaky", 529),
        ("flaky", 200),
    ]


def test_a_short_retry_after_is_waited_out_before_the_retry(
    live_server, claude_config, write_config, api_key, anthropic_upstream
):
    claude_config["models"].append(claude_model("limited", upstream="claude-fail-429-1-ra1-x"))
    write_config(claude_config)
    sdk = openai_client(live_server, api_key)
    started = time.monotonic()
    reply = sdk.chat.completions.create(model="limited", messages=HI)
    assert reply.choices[0].message.content == ANSWER
    assert [a["status"] for a in only_decision().attempts] == [429, 200]
    # The retry went out only after the second the upstream asked for.
    assert time.monotonic() - started >= 1.0


def test_the_upstreams_retry_after_reaches_the_client_when_every_try_failed(
    live_server, claude_config, write_config, api_key, anthropic_upstream
):
    claude_config["models"].append(claude_model("limited", upstream="claude-fail-429-9-ra60-x"))
    write_config(claude_config)
    with pytest.raises(openai.RateLimitError) as caught:
        openai_client(live_server, api_key).chat.completions.create(model="limited", messages=HI)
    assert caught.value.response.headers["retry-after"] == "60"
    # A minute is too long to hold the client: one try, no retry on the same model.
    assert [a["status"] for a in only_decision().attempts] == [429]


def routed_claude_first(claude_config, upstream_model):
    """A cheapest easy-tier Claude model that fails, ahead of the OpenAI-compatible echo-small."""
    claude_config["models"].insert(
        0, claude_model("claude-cheap", tier="easy", price=0.01, upstream=upstream_model)
    )
    return claude_config


def test_a_long_retry_after_moves_on_to_the_next_candidate_at_once(
    live_server, claude_config, write_config, api_key, anthropic_upstream, upstream
):
    write_config(routed_claude_first(claude_config, "claude-fail-429-9-ra60-x"))
    sdk = openai_client(live_server, api_key)
    reply = sdk.chat.completions.create(model="auto", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == OPENAI_ANSWER
    assert [(a["model"], a["status"]) for a in only_decision().attempts] == [
        ("claude-cheap", 429),
        ("echo-small", 200),
    ]


def test_a_routed_request_falls_back_from_claude_to_an_openai_compatible_model(
    live_server, claude_config, write_config, api_key, anthropic_upstream, upstream
):
    write_config(routed_claude_first(claude_config, "claude-fail-529-9-x"))
    sdk = openai_client(live_server, api_key)
    chunks = list(
        sdk.chat.completions.create(
            model="auto", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip() == OPENAI_ANSWER
    decision = only_decision()
    assert decision.chosen_model == "echo-small"
    assert [(a["model"], a["status"]) for a in decision.attempts] == [
        ("claude-cheap", 529),
        ("claude-cheap", 529),
        ("echo-small", 200),
    ]


def test_an_error_event_mid_stream_ends_the_stream_with_a_clean_sse_error(
    live_server, claude_config, api_key, anthropic_upstream
):
    response = requests.post(
        live_server.url + "/v1/chat/completions",
        timeout=20,
        headers={"Authorization": f"Bearer {api_key}"},
        json={"model": "claude-streamerror", "messages": HI, "stream": True},
    )
    assert response.status_code == 200
    events = [e for e in response.content.split(b"\n\n") if e]
    chunks = [json.loads(e[len(b"data: ") :]) for e in events]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[1]["choices"][0]["delta"]["content"] == "Hello "
    assert chunks[-1]["error"]["code"] == "upstream_stream_broken"
    assert "overloaded_error" in chunks[-1]["error"]["message"]
    assert b"[DONE]" not in response.content
    decision = only_decision()
    assert "overloaded_error" in decision.error
    # The openai SDK sees it as an error too, after the text that came first.
    sdk = openai_client(live_server, api_key)
    seen = []
    with pytest.raises(openai.APIError):
        for chunk in sdk.chat.completions.create(
            model="claude-streamerror", messages=HI, stream=True
        ):
            seen.append(chunk)
    assert seen[1].choices[0].delta.content == "Hello "


def test_an_overloaded_error_before_the_first_event_is_retried_like_a_529(
    live_server, claude_config, write_config, api_key, anthropic_upstream
):
    claude_config["models"].append(claude_model("busy", upstream="claude-overloaded-1-x"))
    write_config(claude_config)
    chunks = list(
        openai_client(live_server, api_key).chat.completions.create(
            model="busy", messages=HI, stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ANSWER
    # Nothing had reached the client: the dispatcher could try again.
    assert [(a["result"], a["status"]) for a in only_decision().attempts] == [
        ("status", 529),
        ("ok", 200),
    ]
