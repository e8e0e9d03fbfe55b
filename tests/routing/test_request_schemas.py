"""The Messages and Responses bodies' schemas: what they let through, what they refuse, how.

Each body is read once, by one strict pydantic model (routing/protocols/
{messages,responses}/request.py), as a chat body is. The real clients send
fields and block types the router never reads, so those must pass as sent;
a body the router cannot work with is a 400 in the protocol's own error
shape whose ``param`` is the first place its message names, in the one
path style (``messages[0].content[1].text``). And whatever JSON arrives, the
answer is one of those two, never an exception.
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routing.errors import RouterError
from routing.protocols.base import TranslationError
from routing.protocols.messages.request import messages_to_chat, parse_messages_body
from routing.protocols.messages.wire import MESSAGES
from routing.protocols.responses.request import parse_responses_body, responses_to_chat
from routing.protocols.responses.wire import RESPONSES
from routing.protocols.schema import MAX_MESSAGES, MAX_PARTS

HI = [{"role": "user", "content": "hi"}]


def messages_body(turns=HI, **fields):
    return {"model": "claude-x", "max_tokens": 100, "messages": turns, **fields}


def refusal(parse, body) -> RouterError:
    with pytest.raises(RouterError) as caught:
        parse(json.dumps(body).encode())
    return caught.value


def parse_responses(raw: bytes):
    return parse_responses_body(raw, None)


# --- What the clients send that the router does not read passes as sent ----------


def test_blocks_of_types_the_router_does_not_read_pass_as_sent():
    blocks = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "redacted_thinking", "data": "xx"},
        {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"q": 1}},
        {"type": "web_search_tool_result", "tool_use_id": "s1", "content": [{"x": 1}]},
        {"type": "a_block_type_from_next_year", "anything": [1, {"deep": None}]},
        {"type": "text", "text": "done", "citations": [{"k": "v"}], "cache_control": {}},
    ]
    body = messages_body([*HI, {"role": "assistant", "content": blocks}], x_beta_field={"a": 1})

    _, source = messages_to_chat(body)

    assert source.body["messages"][1]["content"] == blocks
    assert source.body["x_beta_field"] == {"a": 1}


def test_built_in_and_unknown_tools_and_fields_pass_the_responses_schema():
    tools = [
        {"type": "web_search", "filters": {"allowed_domains": ["x"]}},
        {"type": "local_shell"},
        {"type": "a_tool_type_from_next_year", "name": 5},
        {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
    ]
    body = {"model": "m", "input": "x", "tools": tools, "x_new": [1], "include": ["a"]}

    _, source = responses_to_chat(body, [], frozenset({"*"}))

    assert source.body["tools"] == tools
    assert source.builtin_tools == ("web_search", "local_shell", "a_tool_type_from_next_year")


# --- What the schema refuses, by the place it names --------------------------------


@pytest.mark.parametrize(
    "turns, param, says",
    [
        (
            [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text"}]}],
            "messages[0].content[1].text",
            "messages[0].content[1].text: required",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t", "content": [{"type": 3}]}
                    ],
                }
            ],
            "messages[0].content[0].content[0]",
            "a block must be an object with a type",
        ),
        (
            [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f"}]}],
            "messages[0].content[0].input",
            "messages[0].content[0].input: required",
        ),
        (
            [{"role": "wizard", "content": "x"}],
            "messages[0].role",
            "must be one of 'user', 'assistant', 'system', not 'wizard'",
        ),
    ],
)
def test_a_refused_messages_body_names_the_deepest_place_it_went_wrong(turns, param, says):
    error = refusal(parse_messages_body, messages_body(turns))

    assert (error.status, error.param) == (400, param)
    assert says in error.message
    body = json.loads(MESSAGES.render_error(error).content)
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert says in body["error"]["message"]


def test_a_messages_body_past_the_limits_is_refused_before_its_blocks_are_modelled():
    many_parts = [{"role": "user", "content": [{"type": "text", "text": "a"}] * (MAX_PARTS + 1)}]
    many_turns = HI * (MAX_MESSAGES + 1)

    for turns in (many_parts, many_turns):
        error = refusal(parse_messages_body, messages_body(turns))
        assert (error.status, error.param) == (400, "messages")


def test_count_tokens_takes_any_max_tokens_and_messages_wants_a_positive_one():
    body = messages_body(max_tokens="lots")

    assert parse_messages_body(json.dumps(body).encode(), count_only=True).messages
    assert refusal(parse_messages_body, body).param == "max_tokens"


@pytest.mark.parametrize(
    "fields, param",
    [
        ({"previous_response_id": ""}, "previous_response_id"),
        ({"include": "reasoning.encrypted_content"}, "include"),
        ({"instructions": ["be brief"]}, "instructions"),
        ({"metadata": []}, "metadata"),
        ({"tools": [{"type": "namespace", "tools": []}]}, "tools[0].name"),
        ({"parallel_tool_calls": 1}, "parallel_tool_calls"),
    ],
)
def test_a_refused_responses_body_is_a_400_in_the_openai_shape_naming_it(fields, param):
    error = refusal(parse_responses, {"model": "m", "input": "x", **fields})

    assert (error.status, error.param) == (400, param)
    body = json.loads(RESPONSES.render_error(error).content)["error"]
    assert body["param"] == param and body["message"].startswith(f"{param}: ")


# --- Any JSON: parsed, or a 400 in the protocol's shape -----------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image", "tool_use", "tool_result", "thinking", "x"])},
    optional={
        name: json_values | st.text(max_size=3)
        for name in ("text", "source", "id", "name", "input", "tool_use_id", "content")
    },
)
turn = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "tool"]) | json_values},
    optional={"content": st.text(max_size=3) | st.lists(block | json_values, max_size=3)},
)
messages_bodies = st.fixed_dictionaries(
    {"model": st.just("m") | json_values, "messages": st.lists(turn, max_size=3) | json_values},
    optional={
        name: json_values
        for name in ("max_tokens", "system", "tools", "stream", "stop_sequences", "top_k")
    },
)
item = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["message", "function_call", "function_call_output", "x"]),
        "role": st.sampled_from(["user", "assistant", "developer", "robot"]),
        "content": st.text(max_size=3) | st.lists(json_values, max_size=2),
        "call_id": st.text(max_size=3) | json_values,
        "name": st.text(max_size=3) | json_values,
        "output": json_values,
    },
)
responses_bodies = st.fixed_dictionaries(
    {"model": st.just("m") | json_values, "input": st.lists(item, max_size=3) | json_values},
    optional={
        name: json_values
        for name in ("instructions", "tools", "text", "stream", "max_output_tokens", "include")
    },
)
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def parses_or_is_a_400(parse, protocol, raw: bytes, shape) -> None:
    try:
        planned = parse(raw)
    except RouterError as error:
        assert error.status == 400, error.message
        body = json.loads(protocol.render_error(error).content)
        assert shape(body) and error.message
        if error.param is not None:
            assert error.message.startswith(f"{error.param}"), (error.param, error.message)
        return
    assert planned.messages


def anthropic_shape(body) -> bool:
    return body["type"] == "error" and body["error"]["type"] == "invalid_request_error"


def openai_shape(body) -> bool:
    return isinstance(body["error"]["message"], str) and "param" in body["error"]


@PROPERTY
@given(
    st.one_of(messages_bodies, json_values).map(json.dumps).map(str.encode) | st.binary(max_size=40)
)
def test_any_messages_body_parses_or_is_a_400_in_anthropics_shape(raw):
    parses_or_is_a_400(parse_messages_body, MESSAGES, raw, anthropic_shape)


@PROPERTY
@given(
    st.one_of(responses_bodies, json_values).map(json.dumps).map(str.encode)
    | st.binary(max_size=40)
)
def test_any_responses_body_parses_or_is_a_400_in_the_openai_shape(raw):
    parses_or_is_a_400(parse_responses, RESPONSES, raw, openai_shape)


def test_the_message_of_a_refusal_is_where_its_param_points():
    # What the properties lean on: a refused translation names its param first.
    with pytest.raises(TranslationError) as caught:
        responses_to_chat({"model": "m", "input": [{"type": "function_call_output"}]}, [])
    assert caught.value.message.startswith(caught.value.param)
