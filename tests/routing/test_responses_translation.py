"""The Responses <-> chat-completions translation, as pure functions: shapes in, shapes out."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.protocols.base import TranslationError
from routing.protocols.responses.inbound import decode_thinking
from routing.protocols.responses.reply import ResponseEvents, to_response
from routing.protocols.responses.request import responses_to_chat

NAMESPACE_TOOL = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Sub-agents",
    "tools": [{"type": "function", "name": "close_agent", "parameters": {"type": "object"}}],
}
CUSTOM_TOOL = {"type": "custom", "name": "apply_patch", "description": "Patch files"}


def chat_of(body, history=()):
    chat, _ = responses_to_chat({"model": "m", **body}, list(history))
    return chat


@pytest.mark.parametrize(
    ("body", "messages"),
    [
        ({"input": "hi"}, [{"role": "user", "content": "hi"}]),
        (
            {"input": "hi", "instructions": "Be brief."},
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        ),
        (
            {"input": [{"role": "developer", "content": [{"type": "input_text", "text": "x"}]}]},
            [{"role": "system", "content": "x"}],
        ),
        (
            {
                "input": [
                    {
                        "type": "message",
                        "role": "user",
                        "content": [
                            {"type": "input_text", "text": "look"},
                            {"type": "input_image", "image_url": "data:image/png;base64,AA"},
                        ],
                    }
                ]
            },
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "look"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
                    ],
                }
            ],
        ),
        (
            {
                "input": [
                    {"role": "user", "content": "go"},
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "Reading both."}],
                    },
                    {"type": "function_call", "call_id": "a", "name": "read", "arguments": "{}"},
                    {"type": "function_call", "call_id": "b", "name": "read", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "a", "output": "A"},
                    {"type": "function_call_output", "call_id": "b", "output": "B"},
                ]
            },
            [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": "Reading both.",
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "read", "arguments": "{}"},
                        },
                        {
                            "id": "b",
                            "type": "function",
                            "function": {"name": "read", "arguments": "{}"},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "a", "name": "read", "content": "A"},
                {"role": "tool", "tool_call_id": "b", "name": "read", "content": "B"},
            ],
        ),
        (
            {
                "input": [
                    {
                        "type": "function_call",
                        "call_id": "a",
                        "name": "view_image",
                        "arguments": "{}",
                    },
                    {
                        "type": "function_call_output",
                        "call_id": "a",
                        "output": [
                            {"type": "input_text", "text": "the image"},
                            {"type": "input_image", "image_url": "data:image/png;base64,AA"},
                        ],
                    },
                ]
            },
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "view_image", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "a", "name": "view_image", "content": "the image"},
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}
                    ],
                },
            ],
        ),
    ],
)
def test_items_become_chat_messages(body, messages):
    assert chat_of(body)["messages"] == messages


def test_history_comes_before_the_new_input():
    history = [
        {"role": "user", "content": "first"},
        {"type": "message", "role": "assistant", "content": "ok"},
    ]
    assert [m["content"] for m in chat_of({"input": "second"}, history)["messages"]] == [
        "first",
        "ok",
        "second",
    ]


def test_a_namespace_is_flattened_and_its_calls_named_back():
    chat, source = responses_to_chat({"model": "m", "input": "x", "tools": [NAMESPACE_TOOL]}, [])
    assert [t["function"]["name"] for t in chat["tools"]] == ["multi_agent_v1__close_agent"]
    completion = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "multi_agent_v1__close_agent", "arguments": "{}"},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    [item] = to_response(completion, source, "resp_1", "m")["output"]
    assert (item["type"], item["namespace"], item["name"], item["call_id"]) == (
        "function_call",
        "multi_agent_v1",
        "close_agent",
        "c1",
    )
    # And a namespaced call sent back is the flattened name again.
    again = chat_of(
        {
            "input": [
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "namespace": "multi_agent_v1",
                    "name": "close_agent",
                    "arguments": "{}",
                }
            ]
        }
    )
    assert (
        again["messages"][0]["tool_calls"][0]["function"]["name"] == "multi_agent_v1__close_agent"
    )


def test_a_custom_tool_is_a_function_of_one_string_and_comes_back_custom():
    chat, source = responses_to_chat({"model": "m", "input": "x", "tools": [CUSTOM_TOOL]}, [])
    [tool] = chat["tools"]
    assert tool["function"]["parameters"]["required"] == ["input"]
    patch = "*** Begin Patch\n*** End Patch"
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "apply_patch", "arguments": json.dumps({"input": patch})},
    }
    completion = {"choices": [{"message": {"role": "assistant", "tool_calls": [call]}}]}
    [item] = to_response(completion, source, "resp_1", "m")["output"]
    assert (item["type"], item["name"], item["input"]) == ("custom_tool_call", "apply_patch", patch)
    back = chat_of(
        {
            "input": [
                {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": patch}
            ]
        }
    )
    assert json.loads(back["messages"][0]["tool_calls"][0]["function"]["arguments"]) == {
        "input": patch
    }


def test_builtin_tools_and_unreadable_items_are_named():
    _, source = responses_to_chat(
        {
            "model": "m",
            "input": [
                {"role": "user", "content": [{"type": "input_file", "file_id": "f1"}]},
                {"type": "file_search_call", "id": "fs_1"},
            ],
            "tools": [{"type": "web_search"}, {"type": "file_search"}],
        },
        [],
    )
    assert source.builtin_tools == ("web_search", "file_search")
    assert source.untranslatable == (
        "input[0].content[0]: 'input_file'",
        "input[1]: 'file_search_call'",
    )


@pytest.mark.parametrize(
    ("text_format", "response_format"),
    [
        ({"type": "text"}, None),
        ({"type": "json_object"}, {"type": "json_object"}),
        (
            {"type": "json_schema", "name": "n", "schema": {"type": "object"}, "strict": True},
            {
                "type": "json_schema",
                "json_schema": {"name": "n", "schema": {"type": "object"}, "strict": True},
            },
        ),
    ],
)
def test_text_format_becomes_response_format(text_format, response_format):
    assert (
        chat_of({"input": "x", "text": {"format": text_format}}).get("response_format")
        == response_format
    )


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "x"}, "model"),
        ({"model": "m"}, "input"),
        ({"model": "m", "input": []}, "input"),
        ({"model": "m", "input": 5}, "input"),
        ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
        ({"model": "m", "input": ["x"]}, "input[0]"),
        ({"model": "m", "input": [{"type": "function_call", "name": "f"}]}, "input[0]"),
        (
            {"model": "m", "input": [{"type": "function_call_output", "output": "x"}]},
            "input[0].call_id",
        ),
        ({"model": "m", "input": "x", "max_output_tokens": 0}, "max_output_tokens"),
        ({"model": "m", "input": "x", "stream": "yes"}, "stream"),
        ({"model": "m", "input": "x", "tools": [{"name": "f"}]}, "tools[0]"),
        ({"model": "m", "input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
        (
            {"model": "m", "input": "x", "tools": [{"type": "namespace", "name": "n", "tools": 5}]},
            "tools[0].tools",
        ),
        ({"model": "m", "input": "x", "text": True}, "text"),
        ({"model": "m", "input": "x", "reasoning": "high"}, "reasoning"),
        ({"model": "m", "input": "x", "tool_choice": 3}, "tool_choice"),
    ],
)
def test_malformed_bodies_are_refused_naming_the_field(body, param):
    with pytest.raises(TranslationError) as raised:
        responses_to_chat(body, [])
    assert raised.value.param == param


def _chunk(delta=None, finish=None, usage=None):
    chunk = {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}]}
    if usage:
        chunk = {"choices": [], "usage": usage}
    return chunk


def test_a_stream_of_text_then_two_calls_becomes_three_items_in_order():
    _, source = responses_to_chat({"model": "m", "input": "x"}, [])
    events = ResponseEvents(source, "resp_1", "m")
    found = []
    for chunk in [
        _chunk({"role": "assistant", "content": "Let me "}),
        _chunk({"content": "look."}),
        _chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "a", "function": {"name": "read", "arguments": '{"p":'}}
                ]
            }
        ),
        _chunk(
            {
                "tool_calls": [
                    {"index": 1, "id": "b", "function": {"name": "read", "arguments": "{}"}}
                ]
            }
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"x"}'}}]}),
        _chunk(finish="tool_calls"),
        _chunk(usage={"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}),
    ]:
        found += events.feed(chunk)
    found += events.end()

    kinds = [e["type"] for e in found]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [e["sequence_number"] for e in found] == list(range(len(found)))
    # The text item is closed before the first call's item opens.
    assert kinds.index("response.output_text.done") < kinds.index("response.output_item.added", 3)
    final = found[-1]["response"]
    assert [i["type"] for i in final["output"]] == ["message", "function_call", "function_call"]
    assert final["output"][0]["content"][0]["text"] == "Let me look."
    assert [(i["call_id"], i["arguments"]) for i in final["output"][1:]] == [
        ("a", '{"p":"x"}'),
        ("b", "{}"),
    ]
    assert final["usage"]["input_tokens"] == 10 and final["status"] == "completed"
    done = [e for e in found if e["type"] == "response.function_call_arguments.done"]
    assert [e["arguments"] for e in done] == ['{"p":"x"}', "{}"]


def test_an_answer_cut_by_the_token_limit_is_incomplete():
    _, source = responses_to_chat({"model": "m", "input": "x"}, [])
    completion = {
        "choices": [{"message": {"role": "assistant", "content": "Hal"}, "finish_reason": "length"}]
    }
    response = to_response(completion, source, "resp_1", "m")
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
ITEM_KEYS = st.sampled_from(["type", "role", "content", "call_id", "name", "output", "arguments"])
ITEM = st.dictionaries(
    ITEM_KEYS, JSON | st.sampled_from(["message", "function_call", "user"]), max_size=5
)


@settings(max_examples=500, deadline=None)
@given(
    st.fixed_dictionaries(
        {"model": st.just("m"), "input": st.just("hi") | st.lists(ITEM, max_size=5) | JSON},
        optional={
            "tools": st.lists(
                st.dictionaries(st.sampled_from(["type", "name", "tools"]), JSON), max_size=3
            ),
            "text": JSON,
            "reasoning": JSON,
            "tool_choice": JSON,
        },
    )
)
def test_hostile_bodies_are_translated_or_refused_never_crash(body):
    try:
        chat, _ = responses_to_chat(body, [])
    except TranslationError:
        return
    assert chat["messages"]
    json.dumps(chat)


def test_a_refusal_comes_back_as_a_refusal_part():
    _, source = responses_to_chat({"model": "m", "input": "x"}, [])
    answer = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    completion = {"choices": [{"message": answer, "finish_reason": "stop"}]}
    [item] = to_response(completion, source, "resp_1", "m")["output"]
    assert item["content"] == [{"type": "refusal", "refusal": "I can't help with that."}]


def test_streamed_reasoning_becomes_a_reasoning_item_before_the_text():
    _, source = responses_to_chat({"model": "m", "input": "x"}, [])
    events = ResponseEvents(source, "resp_1", "m")
    block = {"type": "thinking", "thinking": "Think.", "signature": "sig"}
    found = []
    for chunk in [
        _chunk({"role": "assistant", "reasoning_content": "Thi"}),
        _chunk({"reasoning_content": "nk."}),
        _chunk({"thinking_blocks": [block]}),
        _chunk({"content": "Done."}),
        _chunk(finish="stop"),
    ]:
        found += events.feed(chunk)
    found += events.end()

    kinds = [e["type"] for e in found]
    assert kinds.index("response.reasoning_summary_text.done") < kinds.index(
        "response.output_text.delta"
    )
    reasoning, message = found[-1]["response"]["output"]
    assert reasoning["summary"] == [{"type": "summary_text", "text": "Think."}]
    assert decode_thinking(reasoning["encrypted_content"]) == [block]
    assert message["content"][0]["text"] == "Done."
    # Sent back, the blocks return to the assistant turn they began.
    chat, source = responses_to_chat(
        {"model": "m", "input": [{"role": "user", "content": "x"}, reasoning, message]}, []
    )
    assert chat["messages"][1] == {
        "role": "assistant",
        "content": "Done.",
        "thinking_blocks": [block],
    }
    assert source.dropped_reasoning == 0


@pytest.mark.parametrize(
    "content", [None, "gAAAA-openai-blob", "router-thinking-v1:%%%", "router-thinking-v1:e30="]
)
def test_reasoning_the_router_did_not_make_is_dropped_for_chat(content):
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": content}
    chat, source = responses_to_chat(
        {"model": "m", "input": [{"role": "user", "content": "x"}, item]}, []
    )
    assert source.dropped_reasoning == 1
    assert chat["messages"] == [{"role": "user", "content": "x"}]


def test_text_after_a_tool_call_is_a_new_message_of_its_own_text():
    _, source = responses_to_chat({"model": "m", "input": "x"}, [])
    events = ResponseEvents(source, "resp_1", "m")
    for chunk in [
        _chunk({"content": "First."}),
        _chunk(
            {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}]}
        ),
        _chunk({"content": "Second."}),
        _chunk({"refusal": "No."}),
    ]:
        events.feed(chunk)
    final = events.end()[-1]["response"]
    assert [i["type"] for i in final["output"]] == [
        "message",
        "function_call",
        "message",
        "message",
    ]
    assert [i["content"][0] for i in final["output"] if i["type"] == "message"] == [
        {"type": "output_text", "text": "First.", "annotations": [], "logprobs": []},
        {"type": "output_text", "text": "Second.", "annotations": [], "logprobs": []},
        {"type": "refusal", "refusal": "No."},
    ]


def test_allowed_tools_and_identity_fields_are_translated():
    chat = chat_of(
        {
            "input": "x",
            "tools": [{"type": "function", "name": "f"}, {"type": "function", "name": "g"}],
            "tool_choice": {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "function", "name": "g"}],
            },
            "user": "u1",
            "safety_identifier": "s1",
            "service_tier": "flex",
        }
    )
    assert chat["tool_choice"] == {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "required",
            "tools": [{"type": "function", "function": {"name": "g"}}],
        },
    }
    assert (chat["user"], chat["safety_identifier"], chat["service_tier"]) == ("u1", "s1", "flex")
