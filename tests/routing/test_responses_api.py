"""End to end: the official openai SDK's ``client.responses`` -> /v1/responses over real HTTP.

Each behaviour runs against the three kinds of upstream a Responses client
can reach: an OpenAI-compatible chat model (the request goes out translated
to chat completions), a Claude model (translated, through the Anthropic
provider) and an upstream that serves the Responses API itself (native).
"""

import json

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routing.models import RouteDecision, StoredResponse
from tests.support.anthropic_upstream import ANSWER as CLAUDE_ANSWER
from tests.support.config import (
    ANTHROPIC_KEY,
    ANTHROPIC_KEY_ENV,
    PROVIDER_KEY,
    PROVIDER_KEY_ENV,
    responses_config,
)
from tests.support.openai_upstream import ANSWER as OPENAI_ANSWER
from tests.support.responses_upstream import ENCRYPTED

pytestmark = pytest.mark.django_db(transaction=True)

# model -> the answer its upstream gives
UPSTREAMS = {
    "echo-medium": OPENAI_ANSWER,
    "claude-echo": CLAUDE_ANSWER,
    "native-echo": OPENAI_ANSWER,
}
TOOLS = [
    {
        "type": "function",
        "name": "read_file",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        "strict": False,
    }
]


@pytest.fixture
def config_data(upstream, anthropic_upstream, write_config, monkeypatch):
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, ANTHROPIC_KEY)
    data = responses_config(anthropic_upstream.base_url, upstream.base_url)
    write_config(data)
    return data


@pytest.fixture
def sdk(live_server, config_data, api_key):
    return openai.OpenAI(
        base_url=live_server.url + "/v1", api_key=api_key, max_retries=0, timeout=20
    )


@pytest.fixture(params=sorted(UPSTREAMS))
def model(request):
    return request.param


def decisions():
    return list(RouteDecision.objects.order_by("id"))


def sent(model, upstream, anthropic_upstream) -> list:
    """What the model's upstream received: (path, body) pairs."""
    if model.startswith("claude"):
        return [("/v1/messages", body) for body in anthropic_upstream.bodies()]
    return [(r["path"], json.loads(r["body"])) for r in upstream.received]


def test_plain_answer_is_a_response_object_and_is_recorded(
    sdk, model, upstream, anthropic_upstream
):
    response = sdk.responses.create(model=model, input="hi", instructions="Be brief.")

    assert response.object == "response"
    assert response.status == "completed"
    assert response.model == model
    assert response.output_text == UPSTREAMS[model]
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    [decision] = decisions()
    assert (decision.chosen_model, decision.status_code) == (model, 200)
    assert decision.prompt_tokens == response.usage.input_tokens
    [(path, body)] = sent(model, upstream, anthropic_upstream)
    if model == "native-echo":
        assert path == "/v1/responses"
        assert body["input"] == [{"type": "message", "role": "user", "content": "hi"}]
        assert body["instructions"] == "Be brief."
    elif model == "echo-medium":
        assert path == "/v1/chat/completions"
        assert body["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
        ]


def test_streamed_answer_arrives_as_the_responses_event_sequence(sdk, model):
    with sdk.responses.stream(model=model, input="hi") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()

    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    for kind in (
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_item.done",
    ):
        assert kind in kinds
    assert final.output_text.strip() == UPSTREAMS[model]
    [decision] = decisions()
    assert decision.stream and decision.status_code == 200
    assert decision.prompt_tokens == final.usage.input_tokens


def test_stream_events_are_numbered_in_order(live_server, config_data, api_key):
    import requests

    response = requests.post(
        live_server.url + "/v1/responses",
        json={"model": "echo-medium", "input": "hi", "stream": True, "tools": TOOLS},
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=20,
    )
    events = [
        json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")
    ]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    kinds = [e["type"] for e in events]
    assert "response.function_call_arguments.delta" in kinds
    assert "response.function_call_arguments.done" in kinds


def test_a_function_call_round_trip_of_three_turns(sdk, model, upstream, anthropic_upstream):
    history = [{"role": "user", "content": "Read the README"}]
    for turn in range(3):
        first = sdk.responses.create(model=model, input=history, tools=TOOLS, store=False)
        [call] = [item for item in first.output if item.type == "function_call"]
        assert call.name == "read_file"
        assert json.loads(call.arguments) == {"path": "README.md"}
        history += [item.model_dump(exclude_none=True) for item in first.output]
        history.append(
            {"type": "function_call_output", "call_id": call.call_id, "output": f"# README {turn}"}
        )
        second = sdk.responses.create(model=model, input=history, tools=TOOLS, store=False)
        assert call.call_id in second.output_text
        history += [item.model_dump(exclude_none=True) for item in second.output]
        history.append({"role": "user", "content": "Again"})

    assert len(decisions()) == 6
    assert StoredResponse.objects.count() == 0  # store: false
    if model == "echo-medium":
        _, last = sent(model, upstream, anthropic_upstream)[-1]
        tool_messages = [m for m in last["messages"] if m["role"] == "tool"]
        assert [m["content"] for m in tool_messages] == ["# README 0", "# README 1", "# README 2"]
        assert all(m["name"] == "read_file" for m in tool_messages)


def test_streamed_tool_call_comes_back_as_a_function_call_item(sdk, model):
    with sdk.responses.stream(model=model, input="Read the README", tools=TOOLS) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()

    [call] = [item for item in final.output if item.type == "function_call"]
    assert json.loads(call.arguments) == {"path": "README.md"}
    assert "response.function_call_arguments.delta" in kinds
    assert "response.output_item.done" in kinds


def ask(sdk, stream: bool, **fields):
    """The final response, asked for plainly or as a stream read to its end."""
    if not stream:
        return sdk.responses.create(**fields)
    with sdk.responses.stream(**fields) as events:
        for _ in events:
            pass
        return events.get_final_response()


@pytest.mark.parametrize("stream", [False, True])
def test_previous_response_id_continues_the_stored_conversation(
    sdk, model, upstream, anthropic_upstream, stream
):
    first = ask(sdk, stream, model=model, input="Read the README", tools=TOOLS)
    [call] = [item for item in first.output if item.type == "function_call"]
    second = sdk.responses.create(
        model=model,
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "# README"}],
        tools=TOOLS,
    )

    assert call.call_id in second.output_text
    assert sdk.responses.retrieve(second.id).output_text == second.output_text
    assert StoredResponse.objects.count() == 2
    if model == "echo-medium":
        _, body = sent(model, upstream, anthropic_upstream)[-1]
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool"]
    if model == "native-echo":
        _, body = sent(model, upstream, anthropic_upstream)[-1]
        assert "previous_response_id" not in body
        assert [item.get("type", "message") for item in body["input"]] == [
            "message",
            "function_call",
            "function_call_output",
        ]


def test_an_unknown_previous_response_is_a_404_not_a_fresh_start(sdk, upstream):
    with pytest.raises(openai.NotFoundError) as raised:
        sdk.responses.create(model="echo-medium", previous_response_id="resp_nope", input="go on")

    assert raised.value.body["code"] == "previous_response_not_found"
    assert raised.value.body["param"] == "previous_response_id"
    assert decisions() == [] and upstream.received == []


def test_an_expired_response_cannot_be_continued_or_read(sdk, config_data, write_config):
    first = sdk.responses.create(model="echo-medium", input="hi")
    StoredResponse.objects.update(expires_at=StoredResponse.objects.get().created_at)

    with pytest.raises(openai.NotFoundError):
        sdk.responses.create(model="echo-medium", previous_response_id=first.id, input="more")
    with pytest.raises(openai.NotFoundError):
        sdk.responses.retrieve(first.id)


def test_a_deleted_response_is_gone(sdk):
    first = sdk.responses.create(model="echo-medium", input="hi")
    sdk.responses.delete(first.id)

    assert StoredResponse.objects.count() == 0
    with pytest.raises(openai.NotFoundError):
        sdk.responses.retrieve(first.id)
    with pytest.raises(openai.NotFoundError):
        sdk.responses.delete(first.id)


def test_another_keys_response_is_not_found(sdk, live_server):
    from routing.auth import create_api_key

    first = sdk.responses.create(model="echo-medium", input="hi")
    _, other = create_api_key("other")
    stranger = openai.OpenAI(base_url=live_server.url + "/v1", api_key=other, max_retries=0)

    with pytest.raises(openai.NotFoundError):
        stranger.responses.retrieve(first.id)


def test_encrypted_reasoning_reaches_a_responses_upstream_untouched(sdk, upstream):
    include = ["reasoning.encrypted_content"]
    first = sdk.responses.create(
        model="native-echo", input="Read it", tools=TOOLS, store=False, include=include
    )
    reasoning, call = first.output
    assert reasoning.type == "reasoning" and reasoning.encrypted_content == ENCRYPTED
    items = [{"role": "user", "content": "Read it"}]
    items += [item.model_dump(exclude_none=True) for item in first.output]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "text"})
    sdk.responses.create(model="native-echo", input=items, tools=TOOLS, include=include)

    sent_items = json.loads(upstream.received[-1]["body"])["input"]
    assert sent_items[1] == first.output[0].model_dump(exclude_none=True)


def test_reasoning_items_are_left_out_for_a_chat_upstream(sdk, upstream, caplog):
    items = [
        {"role": "user", "content": "Read it"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": ENCRYPTED},
        {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "text"},
    ]
    with caplog.at_level("INFO", logger="routing.protocols.responses.wire"):
        sdk.responses.create(model="echo-medium", input=items, tools=TOOLS)

    body = json.loads(upstream.received[-1]["body"])
    assert ENCRYPTED not in json.dumps(body)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool"]
    assert "responses_reasoning_dropped" in caplog.text


@pytest.fixture
def refuse_hosted_tools(config_data, write_config):
    write_config({**config_data, "responses": {"hosted_tools": "refuse"}})


def test_a_builtin_tool_a_chat_upstream_cannot_run_is_left_out_and_named(sdk, upstream):
    raw = sdk.responses.with_raw_response.create(
        model="echo-medium", input="search", tools=[*TOOLS, {"type": "web_search"}]
    )

    assert raw.headers["X-Router-Omitted-Tools"] == "web_search"
    assert raw.parse().status == "completed"
    body = json.loads(upstream.received[-1]["body"])
    assert [t["function"]["name"] for t in body["tools"]] == ["read_file"]
    (row,) = decisions()
    assert row.omitted_tools == ["web_search"]


def test_a_builtin_tool_is_sent_and_not_named_for_a_responses_upstream(sdk, upstream):
    raw = sdk.responses.with_raw_response.create(
        model="native-echo", input="search", tools=[{"type": "web_search"}]
    )

    assert "X-Router-Omitted-Tools" not in raw.headers
    (row,) = decisions()
    assert row.omitted_tools is None


def test_under_refuse_a_builtin_tool_a_chat_upstream_cannot_run_is_refused_by_name(
    refuse_hosted_tools, sdk, upstream
):
    with pytest.raises(openai.BadRequestError) as raised:
        sdk.responses.create(
            model="echo-medium", input="search", tools=[*TOOLS, {"type": "web_search"}]
        )

    assert "'web_search'" in raised.value.message
    assert raised.value.body["code"] == "unsupported_tool"
    assert upstream.received == [] and decisions() == []


def test_under_refuse_a_builtin_tool_marked_optional_is_left_out(
    refuse_hosted_tools, sdk, upstream
):
    sdk.responses.create(
        model="echo-medium",
        input="search",
        tools=[*TOOLS, {"type": "web_search"}],
        extra_headers={"X-Router-Optional-Tools": "web_search"},
    )

    body = json.loads(upstream.received[-1]["body"])
    assert [t["function"]["name"] for t in body["tools"]] == ["read_file"]


def test_a_builtin_tool_goes_to_a_responses_upstream(sdk, upstream):
    sdk.responses.create(model="native-echo", input="search", tools=[{"type": "web_search"}])

    assert json.loads(upstream.received[-1]["body"])["tools"] == [{"type": "web_search"}]


def test_options_are_translated_for_a_chat_upstream(sdk, upstream):
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    sdk.responses.create(
        model="echo-medium",
        input="hi",
        max_output_tokens=50,
        temperature=0.2,
        top_p=0.9,
        reasoning={"effort": "low"},
        text={"format": {"type": "json_schema", "name": "thing", "schema": schema, "strict": True}},
        tools=TOOLS,
        tool_choice={"type": "function", "name": "read_file"},
        parallel_tool_calls=False,
    )

    body = json.loads(upstream.received[-1]["body"])
    assert body["max_tokens"] == 50
    assert (body["temperature"], body["top_p"], body["reasoning_effort"]) == (0.2, 0.9, "low")
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "thing", "schema": schema, "strict": True},
    }
    assert body["tool_choice"] == {"type": "function", "function": {"name": "read_file"}}
    assert body["parallel_tool_calls"] is False


def test_bad_input_is_a_400_in_the_openai_shape_and_leaves_no_row(sdk, upstream):
    with pytest.raises(openai.BadRequestError) as raised:
        sdk.responses.create(model="echo-medium", input=[{"role": "robot", "content": "hi"}])

    assert raised.value.body["param"] == "input[0].role"
    assert decisions() == [] and upstream.received == []


def test_an_unknown_model_is_a_404(sdk):
    with pytest.raises(openai.NotFoundError) as raised:
        sdk.responses.create(model="no-such-model", input="hi")

    assert raised.value.body["code"] == "model_not_found"


def test_a_stream_that_breaks_mid_answer_ends_with_response_failed(
    live_server, config_data, write_config, api_key
):
    import requests

    config_data["models"].append(
        {
            "id": "breaking",
            "provider": "up",
            "upstream_model": "breaks-x",
            "tier": "medium",
            "context_window": 32768,
        }
    )
    write_config(config_data)
    response = requests.post(
        live_server.url + "/v1/responses",
        json={"model": "breaking", "input": "hi", "stream": True},
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=20,
    )
    events = [
        json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")
    ]
    assert response.status_code == 200
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.failed"
    assert events[-1]["response"]["error"]["code"] == "upstream_stream_broken"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    [decision] = decisions()
    assert "stream broke" in decision.error
    assert StoredResponse.objects.count() == 0


@pytest.mark.parametrize("stream", [False, True])
def test_an_unreachable_upstream_is_a_502_in_the_openai_shape(sdk, stream):
    with pytest.raises(openai.InternalServerError) as raised:
        sdk.responses.create(model="unreachable", input="hi", stream=stream)

    assert raised.value.status_code == 502
    assert raised.value.body["code"] == "upstream_unavailable"
    [decision] = decisions()
    assert decision.status_code == 502


def test_prompt_cache_key_names_the_conversation_for_the_prefix_probe(sdk):
    opening = [{"role": "user", "content": "<environment_context>same repo</environment_context>"}]
    later = [*opening, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go"}]
    sdk.responses.create(model="echo-medium", input=opening, prompt_cache_key="session-a")
    # Another session opening the same way is another conversation.
    sdk.responses.create(model="echo-medium", input=opening, prompt_cache_key="session-b")
    sdk.responses.create(model="echo-medium", input=later, prompt_cache_key="session-a")

    a1, b1, a2 = RouteDecision.objects.order_by("id")
    assert (b1.prefix_match, b1.prefix_previous_length) == (0, 0)
    assert (a2.prefix_match, a2.prefix_previous_length, a2.prefix_current_length) == (1, 1, 3)


def test_an_accept_header_for_events_is_served(live_server, config_data, api_key):
    import requests

    response = requests.post(
        live_server.url + "/v1/responses",
        json={"model": "echo-medium", "input": "hi", "stream": True},
        headers={"Authorization": f"Bearer {api_key}", "Accept": "text/event-stream"},
        timeout=20,
    )
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.dictionaries(
        st.sampled_from(
            [
                "input",
                "tools",
                "text",
                "stream",
                "store",
                "previous_response_id",
                "instructions",
                "max_output_tokens",
            ]
        ),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=5), inner, max_size=3)
            ),
            max_leaves=10,
        ),
    )
)
def test_hostile_bodies_get_a_json_4xx_never_a_500(client, config_data, api_key, body):
    response = client.post(
        "/v1/responses",
        data=json.dumps({"model": "no-such-model", **body}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api_key}",
    )
    assert response.status_code in (400, 404), response.content
    assert response.json()["error"]["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_claudes_thinking_comes_back_as_reasoning_and_returns_to_claude(
    sdk, anthropic_upstream, stream
):
    from tests.support.anthropic_upstream import THOUGHT

    ask = dict(model="claude-echo", tools=TOOLS, reasoning={"effort": "low"}, store=False)
    items = [{"role": "user", "content": "Read the README"}]
    if stream:
        with sdk.responses.stream(input=items, **ask) as events:
            kinds = [event.type for event in events]
            first = events.get_final_response()
        assert "response.reasoning_summary_text.delta" in kinds
    else:
        first = sdk.responses.create(input=items, **ask)
    reasoning, call = first.output
    assert reasoning.type == "reasoning" and reasoning.summary[0].text == THOUGHT
    assert reasoning.encrypted_content

    items += [item.model_dump(exclude_none=True) for item in first.output]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "# README"})
    second = sdk.responses.create(input=items, **ask)

    # The test server refuses a tool turn without its signed thinking block: it got it back.
    assert call.call_id in second.output_text
    turn = anthropic_upstream.bodies()[-1]["messages"][1]
    assert turn["role"] == "assistant" and turn["content"][0]["type"] == "thinking"


def test_claudes_thinking_is_not_sent_to_a_chat_model(sdk, upstream):
    from routing.protocols.responses.inbound import encode_thinking

    blocks = [{"type": "thinking", "thinking": "hm", "signature": "sig"}]
    items = [
        {"role": "user", "content": "Read it"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [],
            "encrypted_content": encode_thinking(blocks),
        },
        {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "text"},
    ]
    sdk.responses.create(model="echo-medium", input=items, tools=TOOLS)

    body = json.loads(upstream.received[-1]["body"])
    assert "thinking_blocks" not in json.dumps(body)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool"]


def test_a_stored_responses_input_items_are_listed_a_page_at_a_time(sdk):
    first = sdk.responses.create(model="echo-medium", input="one")
    second = sdk.responses.create(model="echo-medium", previous_response_id=first.id, input="two")

    newest = sdk.responses.input_items.list(second.id, limit=2)
    assert [item.type for item in newest.data] == ["message", "message"]
    assert [item.content[0].text for item in newest.data] == ["two", OPENAI_ANSWER]
    assert newest.has_more
    every = [item for item in sdk.responses.input_items.list(second.id, order="asc", limit=1)]
    assert [item.role for item in every] == ["user", "assistant", "user"]
    assert every[0].content[0].text == "one"
    with pytest.raises(openai.NotFoundError):
        sdk.responses.input_items.list("resp_nope")


def test_under_refuse_auto_sends_a_builtin_tool_to_a_model_that_serves_the_responses_api(
    refuse_hosted_tools, sdk, upstream
):
    sdk.responses.create(model="auto", input="search", tools=[{"type": "web_search"}])
    sdk.responses.create(
        model="auto",
        input="search",
        tools=[*TOOLS, {"type": "web_search"}],
        extra_headers={"X-Router-Optional-Tools": "web_search"},
    )

    native, optional = RouteDecision.objects.order_by("id")
    assert (native.path, native.chosen_model) == ("routed", "native-echo")
    assert upstream.received[0]["path"] == "/v1/responses"
    # Marked optional, the tool need not be run: the cheapest model of the tier takes it.
    assert optional.chosen_model != "native-echo"
