"""The chat-completions <-> Messages translation on its own: tables of cases, no HTTP.

The end-to-end tests (test_anthropic_api.py) show the shapes through the
router and the SDKs; these pin every mapping rule, and the ones a live
request rarely reaches (odd inputs, every stop reason, every event).
"""

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.errors import RouterError
from routing.protocols.base import Event, TranslationError
from routing.protocols.chat.request import parse_chat_request
from routing.protocols.messages.shapes import chat_usage, finish_reason
from routing.providers.anthropic.cache import place_breakpoints
from routing.providers.anthropic.errors import StreamError, error_parts, openai_error_body
from routing.providers.anthropic.request import to_messages_request
from routing.providers.anthropic.response import to_chat_completion
from routing.providers.anthropic.stream import ChunkTranslator, chat_chunks
from routing.replay.corpus import load_sessions
from tests.support.anthropic_upstream import RequestRejected, check_request


def translate(messages, **options):
    return to_messages_request({"model": "claude", "messages": messages, **options}).body


CALL = {
    "id": "toolu_1",
    "type": "function",
    "function": {"name": "bash", "arguments": '{"cmd": "ls"}'},
}
TOOL = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
GO = {"role": "user", "content": [{"type": "text", "text": "go"}]}


def tool_use(call_id="toolu_1"):
    return {"type": "tool_use", "id": call_id, "name": "bash", "input": {"cmd": "ls"}}


MESSAGES = [
    (
        "system and developer messages become system blocks, wherever they are",
        [
            {"role": "system", "content": "a"},
            {"role": "user", "content": "hi"},
            {"role": "developer", "content": [{"type": "text", "text": "b"}]},
        ],
        {
            "system": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        },
    ),
    (
        "thinking blocks sent back come first in their assistant turn",
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": "ok",
                "thinking_blocks": [
                    {"type": "thinking", "thinking": "t", "signature": "sig-test", "extra": 1},
                    {"type": "redacted_thinking", "data": "opaque"},
                ],
            },
        ],
        {
            "messages": [
                GO,
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "t", "signature": "sig-test"},
                        {"type": "redacted_thinking", "data": "opaque"},
                        {"type": "text", "text": "ok"},
                    ],
                },
            ]
        },
    ),
    (
        "consecutive user messages are one turn",
        [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                }
            ]
        },
    ),
    (
        "a tool call with no text is a tool_use block, its result the next user turn",
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "toolu_1", "content": "file.txt"},
            {"role": "user", "content": "and?"},
        ],
        {
            "messages": [
                GO,
                {
                    "role": "assistant",
                    "content": [tool_use()],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "file.txt"},
                        {"type": "text", "text": "and?"},
                    ],
                },
            ]
        },
    ),
    (
        "a result given as parts keeps them as blocks; an empty one has no content",
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [CALL, {**CALL, "id": "toolu_2"}]},
            {"role": "tool", "tool_call_id": "toolu_1", "content": [{"type": "text", "text": "x"}]},
            {"role": "tool", "tool_call_id": "toolu_2", "content": ""},
        ],
        {
            "messages": [
                GO,
                {
                    "role": "assistant",
                    "content": [
                        tool_use(),
                        tool_use("toolu_2"),
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "content": [{"type": "text", "text": "x"}],
                        },
                        {"type": "tool_result", "tool_use_id": "toolu_2"},
                    ],
                },
            ]
        },
    ),
]


@pytest.mark.parametrize("case, messages, expected", MESSAGES, ids=[c[0] for c in MESSAGES])
def test_messages_translate_to_turns_of_blocks(case, messages, expected):
    body = translate(messages, tools=[TOOL])
    for key, value in expected.items():
        assert body[key] == value
    check_request(body)  # and the Messages API would take it


TOOL_CHOICES = [
    ("auto", None, {"type": "auto"}),
    ("auto", False, {"type": "auto", "disable_parallel_tool_use": True}),
    (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
    ("none", False, {"type": "none"}),
    ("required", None, {"type": "any"}),
    ("required", True, {"type": "any"}),
    ({"type": "function", "function": {"name": "bash"}}, None, {"type": "tool", "name": "bash"}),
]


@pytest.mark.parametrize("choice, parallel, expected", TOOL_CHOICES)
def test_tool_choice_translates(choice, parallel, expected):
    options = {"tools": [TOOL], "tool_choice": choice, "parallel_tool_calls": parallel}
    assert translate([{"role": "user", "content": "x"}], **options)["tool_choice"] == expected


def test_without_tool_choice_or_tools_none_is_sent():
    assert "tool_choice" not in translate([{"role": "user", "content": "x"}], tools=[TOOL])
    assert "tool_choice" not in translate([{"role": "user", "content": "x"}], tool_choice="auto")


UNTRANSLATABLE = [
    ({"n": 2}, "n"),
    ({"response_format": {"type": "json_object"}}, "response_format"),
    ({"response_format": {"type": "json_schema", "json_schema": {}}}, "response_format"),
    ({"reasoning_effort": "extreme"}, "reasoning_effort"),
    ({"tool_choice": "sometimes", "tools": [TOOL]}, "tool_choice"),
    ({"tools": [{"type": "web_search"}]}, "tools[0]"),
]


@pytest.mark.parametrize("options, param", UNTRANSLATABLE)
def test_what_the_messages_api_cannot_express_names_the_field(options, param):
    with pytest.raises(TranslationError) as caught:
        translate([{"role": "user", "content": "x"}], **options)
    assert caught.value.param == param


BAD_MESSAGES = [
    {"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]},
    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://x/y.png"}}]},
    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png,AA"}}]},
    {"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "{"}}]},
    {"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "[1]"}}]},
    {"role": "function", "name": "f", "content": "x"},
]


@pytest.mark.parametrize("message", BAD_MESSAGES)
def test_a_message_the_api_cannot_take_is_a_translation_error(message):
    with pytest.raises(TranslationError):
        translate([{"role": "user", "content": "x"}, message])


def test_thinking_budget_raises_max_tokens_past_it_and_drops_sampling():
    body = to_messages_request(
        {
            "model": "c",
            "messages": [{"role": "user", "content": "x"}],
            "max_tokens": 500,
            "reasoning_effort": "medium",
            "temperature": 0.1,
        },
        api_version="2023-06-01",
    ).body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert body["max_tokens"] == 8692  # the budget plus what the answer may use
    assert "temperature" not in body
    assert "thinking" not in translate([{"role": "user", "content": "x"}], reasoning_effort="none")


def test_breakpoints_never_touch_the_callers_messages():
    part = {"type": "text", "text": "y" * 5000, "cache_control": {"type": "ephemeral"}}
    messages = [
        {"role": "system", "content": "s" * 5000},
        {"role": "user", "content": [part]},
        {"role": "assistant", "content": "ok", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "z" * 5000},
    ]
    before = copy.deepcopy(messages)
    request = to_messages_request({"model": "c", "messages": messages, "tools": [TOOL]})
    marked = place_breakpoints(request, 3, 2, min_tokens=1024, ttl="1h")
    assert messages == before
    assert len(marked) == 4
    # The client's 5-minute breakpoint comes first: ours after it may not be longer.
    assert [b["cache_control"] for b in marked] == [
        {"type": "ephemeral", "ttl": "1h"},  # system
        {"type": "ephemeral"},  # the client's, on the user message
        {"type": "ephemeral"},  # stable: the tool call
        {"type": "ephemeral"},  # latest: the tool result
    ]


def test_our_breakpoints_before_a_clients_one_hour_breakpoint_last_an_hour_too():
    hour = {"type": "ephemeral", "ttl": "1h"}
    messages = [
        {"role": "system", "content": "s" * 5000},
        {"role": "user", "content": "u" * 5000},
        {"role": "assistant", "content": [{"type": "text", "text": "a", "cache_control": hour}]},
        {"role": "user", "content": "v" * 5000},
    ]
    request = to_messages_request({"model": "c", "messages": messages})
    marked = place_breakpoints(request, 2, 2, min_tokens=1024, ttl="5m")
    assert [b["cache_control"] for b in marked] == [
        hour,  # system: ours, before the client's hour
        hour,  # the stable prefix (the first user message): ours, before it too
        hour,  # the client's
        {"type": "ephemeral"},  # the latest message: ours, after it, the model's 5 minutes
    ]
    check_request(request.body)


STOP_REASONS = [
    ("end_turn", "stop"),
    ("stop_sequence", "stop"),
    ("pause_turn", "stop"),
    ("max_tokens", "length"),
    ("model_context_window_exceeded", "length"),
    ("tool_use", "tool_calls"),
    ("refusal", "content_filter"),
    ("a_reason_added_later", "stop"),
    (None, None),
]


@pytest.mark.parametrize("stop_reason, expected", STOP_REASONS)
def test_stop_reasons_become_finish_reasons(stop_reason, expected):
    assert finish_reason(stop_reason) == expected


def test_usage_counts_cache_reads_and_writes_in_the_prompt():
    usage = chat_usage(
        {
            "input_tokens": 10,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 200,
            "output_tokens": 5,
        }
    )
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (
        1210,
        5,
        1215,
    )
    assert usage["prompt_tokens_details"] == {"cached_tokens": 1000, "cache_write_tokens": 200}


def test_a_message_with_thinking_text_and_tools_is_one_chat_message():
    completion = to_chat_completion(
        {
            "id": "msg_1",
            "type": "message",
            "model": "claude",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_9", "name": "bash", "input": {"cmd": "ls"}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 3, "output_tokens": 4},
        }
    )
    (choice,) = completion["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"] == {
        "role": "assistant",
        "content": "Reading.",
        "reasoning_content": "hmm",
        "thinking_blocks": [{"type": "thinking", "thinking": "hmm", "signature": "s"}],
        "tool_calls": [
            {
                "id": "toolu_9",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"cmd": "ls"}'},
            }
        ],
    }


def parsed(events):
    """Anthropic events as the provider reads them off the wire: SSE bytes, parsed once."""
    return (Event.parse(f"event: {e['type']}\ndata: {json.dumps(e)}".encode()) for e in events)


EVENTS = [
    {
        "type": "message_start",
        "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 7}},
    },
    {"type": "ping"},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "thinking_delta", "thinking": "h"},
    },
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "signature_delta", "signature": "s"},
    },
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 1},
    {
        "type": "content_block_start",
        "index": 2,
        "content_block": {"type": "tool_use", "id": "toolu_a", "name": "bash", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 2,
        "delta": {"type": "input_json_delta", "partial_json": '{"c'},
    },
    {
        "type": "content_block_delta",
        "index": 2,
        "delta": {"type": "input_json_delta", "partial_json": '": 1}'},
    },
    {"type": "content_block_stop", "index": 2},
    {
        "type": "content_block_start",
        "index": 3,
        "content_block": {"type": "tool_use", "id": "toolu_b", "name": "bash", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 3,
        "delta": {"type": "input_json_delta", "partial_json": "{}"},
    },
    {"type": "content_block_stop", "index": 3},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use"},
        "usage": {"output_tokens": 9, "cache_read_input_tokens": 100},
    },
    {"type": "message_stop"},
]


def test_an_event_stream_becomes_chat_chunks_in_order():
    events = [e.data for e in chat_chunks(parsed(EVENTS), True) if not e.done]
    deltas = [(c["choices"][0]["delta"], c["choices"][0]["finish_reason"]) for c in events[:-1]]
    assert deltas == [
        ({"role": "assistant", "content": ""}, None),
        ({"reasoning_content": "h"}, None),
        ({"thinking_blocks": [{"type": "thinking", "thinking": "h", "signature": "s"}]}, None),
        ({"content": "Hi"}, None),
        (
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "toolu_a",
                        "type": "function",
                        "function": {"name": "bash", "arguments": ""},
                    }
                ]
            },
            None,
        ),
        ({"tool_calls": [{"index": 0, "function": {"arguments": '{"c'}}]}, None),
        ({"tool_calls": [{"index": 0, "function": {"arguments": '": 1}'}}]}, None),
        (
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "toolu_b",
                        "type": "function",
                        "function": {"name": "bash", "arguments": ""},
                    }
                ]
            },
            None,
        ),
        ({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}, None),
        ({}, "tool_calls"),
    ]
    assert all(c["id"] == "msg_1" and c["object"] == "chat.completion.chunk" for c in events)
    assert events[-1]["choices"] == []
    assert events[-1]["usage"]["prompt_tokens"] == 107
    assert events[-1]["usage"]["completion_tokens"] == 9


def test_a_stream_ends_with_done_and_hides_usage_unless_asked():
    chunks = [e.sse() for e in chat_chunks(parsed(EVENTS), False)]
    assert chunks[-1] == b"data: [DONE]"
    assert all(b'"usage"' not in c for c in chunks)


def test_an_error_event_raises_with_its_type():
    translator = ChunkTranslator(include_usage=False)
    translator.feed(EVENTS[0])
    with pytest.raises(StreamError) as caught:
        translator.feed({"type": "error", "error": {"type": "overloaded_error", "message": "Busy"}})
    assert caught.value.error_type == "overloaded_error"


ERROR_TYPES = [
    ("invalid_request_error", "invalid_request_error"),
    ("authentication_error", "authentication_error"),
    ("permission_error", "permission_error"),
    ("not_found_error", "not_found_error"),
    ("request_too_large", "invalid_request_error"),
    ("rate_limit_error", "rate_limit_error"),
    ("api_error", "server_error"),
    ("overloaded_error", "server_error"),
    ("an_error_added_later", "api_error"),
]


@pytest.mark.parametrize("anthropic_type, openai_type", ERROR_TYPES)
def test_anthropic_error_types_keep_their_name_as_the_code(anthropic_type, openai_type):
    body = {"type": "error", "error": {"type": anthropic_type, "message": "m"}}
    error_type, message = error_parts(body)
    assert openai_error_body(error_type, message) == {
        "error": {"message": "m", "type": openai_type, "param": None, "code": anthropic_type}
    }


def test_an_error_body_that_is_not_anthropics_is_an_api_error():
    assert error_parts("<html>") == ("api_error", "")


def test_the_fake_refuses_what_the_api_refuses():
    # The fake is what the translation is checked against: it must be able to say no.
    with pytest.raises(RequestRejected):
        check_request({"model": "c", "max_tokens": 5, "messages": [], "temperature": 1})
    short, long = {"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}
    with pytest.raises(RequestRejected):
        check_request(
            {
                "model": "c",
                "max_tokens": 5,
                "system": [{"type": "text", "text": "s", "cache_control": short}],
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "u", "cache_control": long}],
                    }
                ],
            }
        )
    with pytest.raises(RequestRejected):
        check_request(
            {
                "model": "c",
                "max_tokens": 5,
                "messages": [
                    {"role": "user", "content": "a"},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
                    },
                    {"role": "user", "content": "no result"},
                ],
            }
        )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["type", "text", "function", "name", "x"]), inner, max_size=3
        )
    ),
    max_leaves=8,
)
parts = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=5)),
        st.builds(
            lambda t, c: {"type": "text", "text": t, "cache_control": c},
            st.text(min_size=1, max_size=5),
            st.one_of(st.just({"type": "ephemeral"}), json_values),
        ),
        st.just({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}),
        st.just({"type": "image_url", "image_url": {"url": "https://x/y.png"}}),
        json_values,
    ),
    max_size=3,
)
contents = st.one_of(st.text(max_size=8), st.none(), parts)
good_call = st.builds(
    lambda i, args: {
        "id": f"c{i}",
        "type": "function",
        "function": {"name": "f", "arguments": args},
    },
    st.integers(0, 3),
    st.sampled_from(['{"a": 1}', "{}", "", "{", "[1]"]),
)
messages_strategy = st.lists(
    st.one_of(
        st.builds(lambda c: {"role": "user", "content": c}, contents),
        st.builds(lambda c: {"role": "system", "content": c}, contents),
        st.builds(
            lambda c, calls: {"role": "assistant", "content": c, "tool_calls": calls},
            contents,
            st.one_of(st.lists(good_call, max_size=2), json_values),
        ),
        st.builds(
            lambda c, i, e: {"role": "tool", "tool_call_id": f"c{i}", "content": c, "is_error": e},
            contents,
            st.integers(0, 3),
            json_values,
        ),
    ),
    min_size=1,
    max_size=8,
)
option_values = {
    "tools": st.one_of(st.just([TOOL]), st.lists(json_values, max_size=2)),
    "tool_choice": st.one_of(st.sampled_from(["auto", "none", "required"]), json_values),
    "parallel_tool_calls": json_values,
    "stop": json_values,
    "metadata": json_values,
    "user": json_values,
    "response_format": st.one_of(
        st.just({"type": "json_schema", "json_schema": {"schema": {"type": "object"}}}),
        json_values,
    ),
    "reasoning_effort": st.one_of(st.sampled_from(["low", "high", "none"]), json_values),
    "max_tokens": st.integers(1, 10_000),
    "temperature": json_values,
}
hostile_options = st.dictionaries(
    st.sampled_from(sorted(option_values)), st.none(), max_size=4
).flatmap(lambda keys: st.fixed_dictionaries({k: option_values[k] for k in keys}))


@settings(max_examples=400, deadline=None)
@given(messages_strategy, hostile_options)
def test_any_request_the_router_accepts_translates_or_is_refused_by_name(messages, options):
    body = {"model": "claude", "messages": messages, **options}
    try:
        parse_chat_request(body)
    except RouterError:
        return  # refused before any provider sees it
    try:
        request = to_messages_request(body, api_version="2023-06-01")
    except TranslationError:
        return
    place_breakpoints(request, len(messages), 0, min_tokens=0)
    json.dumps(request.body)


def test_every_request_of_every_corpus_session_is_one_the_messages_api_takes(corpus_dir):
    checked = 0
    for conversation in load_sessions([corpus_dir]):
        names = {
            c["function"]["name"] for m in conversation.messages for c in m.get("tool_calls") or ()
        }
        tools = [{"type": "function", "function": {"name": n}} for n in sorted(names)]
        for messages in conversation.requests():
            request = to_messages_request({"model": "claude", "messages": messages, "tools": tools})
            place_breakpoints(request, len(messages) - 3, len(messages) - 5, min_tokens=1024)
            check_request(request.body)
            checked += 1
    assert checked > 2000


@pytest.mark.parametrize("marker", ["yes", True, 5, ["type", "ephemeral"]])
def test_a_client_cache_control_that_is_not_an_object_is_left_out(marker):
    part = {"type": "text", "text": "r", "cache_control": marker}
    body = translate(
        [
            {"role": "user", "content": [part]},
            {"role": "assistant", "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "toolu_1", "content": [part]},
        ],
        tools=[TOOL],
    )
    assert "cache_control" not in json.dumps(body)
