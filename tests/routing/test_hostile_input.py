"""Hostile and broken bodies: always an answer in the OpenAI shape, never a 5xx, never half a row.

The named cases are the ones that crashed the view in issue 13; the property
tests throw generated bodies at every client endpoint (chat completions, and the
other client protocols in their own error shapes). Bodies go through the
whole stack in process (Django's test client) to a real local upstream, so a
body the schema lets through is really planned, pruned, sent and recorded.
"""

import base64
import json
import os

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from routing.models import RouteDecision
from routing.protocols.chat.request import MAX_MESSAGES
from routing.protocols.responses.inbound import THINKING_PREFIX

pytestmark = pytest.mark.django_db

ENDPOINTS = ["/v1/chat/completions"]
# Models the strategy picks from: routed, pinned (with and without tools), unknown, empty.
MODELS = ["auto", "echo-medium", "echo-small", "text-only", "no-such-model", ""]
ROLES = ["system", "developer", "user", "assistant", "tool", "function", "wizard", ""]
CLIENT_ERRORS = {400, 401, 404, 413, 422}


@pytest.fixture
def call(client, router_config, api_key):
    def send(raw: bytes, endpoint=ENDPOINTS[0]):
        response = client.post(
            endpoint,
            data=raw,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {api_key}",
        )
        content = b"".join(response.streaming_content) if response.streaming else response.content
        return response.status_code, response.get("Content-Type", ""), content

    return send


def assert_openai_answer(status, content_type, content):
    """A 2xx answer, or an error in the OpenAI shape; never a 5xx from the router."""
    assert status < 500, content[:500]
    if status == 200:
        assert content_type.startswith(("application/json", "text/event-stream"))
        return
    assert content_type.startswith("application/json"), content[:200]
    error = json.loads(content)["error"]
    assert isinstance(error["message"], str) and error["message"]
    assert {"type", "code", "param"} <= set(error)


def body(**fields):
    return json.dumps({"model": "echo-medium", **fields}).encode()


HI = [{"role": "user", "content": "hi"}]

HOSTILE = {
    "role is a list": body(messages=[{"role": ["user"], "content": "x"}]),
    "role is a dict": body(messages=[{"role": {"user": 1}, "content": "x"}]),
    "lone surrogate in content": b'{"model": "echo-medium", "messages": '
    b'[{"role": "user", "content": "a\\ud800b"}]}',
    "lone surrogate in an extra field": b'{"model": "echo-medium", "user": "\\udfff", '
    b'"messages": [{"role": "user", "content": "x"}]}',
    "invalid UTF-8 bytes": b'{"model": "echo-medium", "messages": '
    b'[{"role": "user", "content": "\xff\xfe"}]}',
    "[ nested 100,000 deep": b"[" * 100_000 + b"]" * 100_000,
    "an extra field nested 300 deep": body(messages=HI)[:-1]
    + b', "metadata": '
    + b"[" * 300
    + b"]" * 300
    + b"}",
    "nested 100,000 deep inside a message": body(messages=[{"role": "user", "content": "x"}])[:-1]
    + b', "metadata": '
    + b'{"a": ' * 100_000
    + b"1"
    + b"}" * 100_000
    + b"}",
    "content is a number": body(messages=[{"role": "user", "content": 7}]),
    "a part without a type": body(messages=[{"role": "user", "content": [{"text": "x"}]}]),
    "tool_calls is an object": body(
        messages=[{"role": "assistant", "content": None, "tool_calls": {"id": "1"}}, *HI]
    ),
    "tool call arguments are an object": body(
        messages=[
            {
                "role": "assistant",
                "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": {}}}],
            },
            *HI,
        ]
    ),
    "tool result without tool_call_id": body(messages=[{"role": "tool", "content": "x"}]),
    "too many messages": body(messages=HI * (MAX_MESSAGES + 1)),
    "400,000 one-character parts": body(
        messages=[{"role": "user", "content": [{"type": "text", "text": "a"}] * 400_000}]
    ),
    "stream is a string": body(messages=HI, stream="true"),
    "max_tokens is a bool": body(messages=HI, max_tokens=True),
    "NaN": b'{"model": "echo-medium", "messages": [{"role": "user", "content": "x"}], '
    b'"temperature": NaN}',
    "tools is a list of strings": body(messages=HI, tools=["x"]),
    "not an object": b'"hello"',
    "empty body": b"",
}


@pytest.mark.parametrize("raw", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_body_gets_400_in_the_openai_shape_and_leaves_no_row(call, upstream, raw):
    status, content_type, content = call(raw)

    assert status == 400, content[:300]
    assert_openai_answer(status, content_type, content)
    assert RouteDecision.objects.count() == 0
    assert upstream.received == []


def test_a_host_the_router_does_not_serve_gets_a_json_400(client, api_key):
    client.raise_request_exception = False
    response = client.post(
        ENDPOINTS[0],
        data=body(messages=HI),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api_key}",
        HTTP_HOST="evil.example",
    )

    assert_openai_answer(response.status_code, response["Content-Type"], response.content)
    assert response.status_code == 400
    assert RouteDecision.objects.count() == 0


def test_unknown_fields_pass_through_untouched(call, upstream):
    raw = (
        b'{"model": "echo-medium", "x_vendor": {"z": 1, "a": [true, null]}, '
        b'"messages": [{"role": "user", "content": "hi", "x_meta": {"b": 2, "a": 1}}]}'
    )
    status, _, _ = call(raw)

    assert status == 200
    sent = json.loads(upstream.received[0]["body"])
    assert sent["x_vendor"] == {"z": 1, "a": [True, None]}
    assert list(sent["messages"][0]["x_meta"]) == ["b", "a"]


def test_an_integer_past_64_bits_goes_upstream_as_sent(call, upstream):
    raw = body(messages=HI)[:-1] + b', "seed": 123456789012345678901234567890}'
    status, _, _ = call(raw)

    assert status == 200
    assert b'"seed":123456789012345678901234567890' in upstream.received[0]["body"]


# --- Property-based: generated bodies through the whole stack ---


def json_of(strings):
    """Any JSON value whose strings come from ``strings``."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | strings,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3),
        max_leaves=8,
    )


# Any character, lone surrogates included: json.dumps escapes them as \\udXXX.
any_text = st.text(st.characters(exclude_categories=()), max_size=20)
json_values = json_of(any_text)
parts = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "image_url", "tool_result", "x"]) | json_values},
        optional={"text": any_text | json_values, "image_url": json_values},
    ),
    max_size=3,
)
tool_calls = st.lists(
    st.fixed_dictionaries(
        {"id": st.text(max_size=5) | json_values},
        optional={
            "type": st.just("function") | json_values,
            "function": st.fixed_dictionaries(
                {"name": st.text(max_size=8) | json_values, "arguments": any_text | json_values}
            )
            | json_values,
        },
    ),
    max_size=2,
)
messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(ROLES) | json_values},
        optional={
            "content": any_text | parts | st.none() | json_values,
            "tool_calls": tool_calls | json_values,
            "tool_call_id": st.text(max_size=5) | json_values,
            "name": any_text | json_values,
            "x_extra": json_values,
        },
    ),
    max_size=6,
)
chat_bodies = st.fixed_dictionaries(
    {"model": st.sampled_from(MODELS) | json_values, "messages": messages | json_values},
    optional={
        "stream": st.booleans() | json_values,
        "stream_options": st.fixed_dictionaries({"include_usage": st.booleans()}) | json_values,
        "tools": st.lists(
            st.fixed_dictionaries(
                {"type": st.just("function"), "function": st.fixed_dictionaries({"name": any_text})}
            ),
            max_size=2,
        )
        | json_values,
        "max_tokens": st.integers(-5, 100_000) | json_values,
        "response_format": st.fixed_dictionaries({"type": st.just("json_object")}) | json_values,
        "x_vendor": json_values,
    },
)

# Schema-valid bodies with any encodable text: each must be served (or get the 404/422 a
# client error deserves) and leave its row.
text = st.text(max_size=40)
valid_calls = st.lists(
    st.fixed_dictionaries(
        {
            "id": text,
            "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": text, "arguments": text}),
        }
    ),
    min_size=1,
    max_size=2,
)
valid_content = (
    text
    | st.none()
    | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": text}), max_size=3)
)
valid_messages = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["system", "developer", "user"]), "content": valid_content}
        ),
        st.fixed_dictionaries(
            {"role": st.just("assistant"), "content": valid_content},
            optional={"tool_calls": valid_calls},
        ),
        st.fixed_dictionaries(
            {"role": st.just("tool"), "tool_call_id": text, "content": valid_content}
        ),
    ),
    min_size=1,
    max_size=8,
)
valid_bodies = st.fixed_dictionaries(
    {"model": st.sampled_from(MODELS[:-2]), "messages": valid_messages},
    optional={
        "stream": st.booleans(),
        "max_tokens": st.integers(1, 100_000),
        "tools": st.lists(
            st.fixed_dictionaries(
                {"type": st.just("function"), "function": st.fixed_dictionaries({"name": text})}
            ),
            min_size=1,
            max_size=2,
        ),
        "x_vendor": json_of(text),
    },
)

# CI runs 400 + 300 + 200 examples; ROUTER_FUZZ_EXAMPLES=3000 for a long run by hand.
EXAMPLES = int(os.environ.get("ROUTER_FUZZ_EXAMPLES", "400"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def call_counting_rows(call, data, endpoint):
    """Send one generated body; check the answer's shape; (status, content, new rows)."""
    rows_before = RouteDecision.objects.count()
    status, content_type, content = call(json.dumps(data).encode(), endpoint)
    event(f"status {status}")
    assert_openai_answer(status, content_type, content)
    return status, content, RouteDecision.objects.count() - rows_before


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@FUZZ
@given(data=chat_bodies)
def test_generated_chat_bodies_never_get_a_5xx(call, upstream, endpoint, data):
    status, content, rows = call_counting_rows(call, data, endpoint)

    assert rows == (0 if status in CLIENT_ERRORS else 1)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@settings(FUZZ, max_examples=EXAMPLES * 3 // 4)
@given(data=valid_bodies)
def test_generated_valid_bodies_are_served_and_recorded(call, upstream, endpoint, data):
    status, content, rows = call_counting_rows(call, data, endpoint)

    assert status in (200, 422), content[:300]
    assert rows == (1 if status == 200 else 0)
    if status == 200:
        assert RouteDecision.objects.latest("id").status_code == 200


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@settings(FUZZ, max_examples=EXAMPLES // 2)
@given(raw=st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode()))
def test_generated_raw_bytes_never_get_a_5xx(call, endpoint, raw):
    status, content_type, content = call(raw, endpoint)
    event(f"status {status}")
    assert_openai_answer(status, content_type, content)
    assert RouteDecision.objects.count() == 0


# --- the other client protocols: the same promise in their own error shapes ---------

# endpoint -> a check that an error body is in that endpoint's protocol shape
OTHER_PROTOCOLS = {
    "/v1/messages": lambda body: body["type"] == "error" and body["error"]["message"],
    "/v1/responses": lambda body: isinstance(body["error"]["message"], str),
}


@pytest.mark.parametrize("endpoint", sorted(OTHER_PROTOCOLS))
@settings(FUZZ, max_examples=EXAMPLES // 2)
@given(
    raw=st.binary(max_size=200)
    | json_values.map(lambda v: json.dumps(v).encode())
    | chat_bodies.map(lambda v: json.dumps(v).encode())
)
def test_generated_bodies_on_the_other_endpoints_never_get_a_5xx(call, upstream, endpoint, raw):
    rows_before = RouteDecision.objects.count()
    status, content_type, content = call(raw, endpoint)
    event(f"{endpoint} status {status}")

    assert status < 500, content[:500]
    if status != 200:
        assert content_type.startswith("application/json"), content[:200]
        assert OTHER_PROTOCOLS[endpoint](json.loads(content)), content[:300]
        assert RouteDecision.objects.count() == rows_before


def responses_body(input_items):
    return json.dumps({"model": "echo-medium", "input": input_items}).encode()


RESPONSES_HOSTILE = {
    # The router's own thinking prefix, then base64 of JSON nested past Python's stack.
    "encrypted_content nested 100,000 deep": responses_body(
        [
            {
                "type": "reasoning",
                "summary": [],
                "encrypted_content": THINKING_PREFIX + base64.b64encode(b"[" * 100_000).decode(),
            },
            {"type": "message", "role": "user", "content": "hi"},
        ]
    ),
    "a tool output part whose text is a number": responses_body(
        [
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [{"type": "input_text", "text": 5}],
            },
        ]
    ),
}


@pytest.mark.parametrize("raw", RESPONSES_HOSTILE.values(), ids=RESPONSES_HOSTILE.keys())
def test_a_hostile_responses_body_never_gets_a_5xx(call, upstream, raw):
    status, content_type, content = call(raw, "/v1/responses")

    assert_openai_answer(status, content_type, content)
