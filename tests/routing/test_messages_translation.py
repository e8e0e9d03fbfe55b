"""The Messages API <-> chat completions, the direction Claude Code needs: pure, no server.

What pinch sees of a Messages request (tool_result blocks as tool messages),
how its changes land back on exactly those blocks, and how a chat answer
becomes a Message and Messages events.
"""

import json

import pytest
from anthropic import types as sdk
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from pinch import prune_context, value_tokens
from routing.protocols.base import TranslationError
from routing.protocols.messages.native import native_request
from routing.protocols.messages.reply import MessageEvents, to_message
from routing.protocols.messages.request import messages_to_chat
from routing.protocols.messages.shapes import blocks_of

MARK = {"type": "ephemeral"}
EVENT = TypeAdapter(sdk.RawMessageStreamEvent)


def body_with(messages, **extra):
    return {"model": "claude-x", "max_tokens": 100, "messages": messages, **extra}


CONVERSATION = [
    {"role": "user", "content": "fix it"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}},
            {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "A" * 9000},
            {
                "type": "tool_result",
                "tool_use_id": "t2",
                "is_error": True,
                "cache_control": MARK,
                "content": [
                    {"type": "text", "text": "B" * 9000},
                    {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
                ],
            },
            {"type": "text", "text": "<system-reminder>keep going</system-reminder>"},
        ],
    },
    {"role": "assistant", "content": "Done?"},
    {"role": "user", "content": [{"type": "text", "text": "yes", "cache_control": MARK}]},
]


def test_tool_results_become_named_tool_messages_before_the_turns_text():
    chat, source = messages_to_chat(
        body_with(CONVERSATION, system=[{"type": "text", "text": "You are Claude Code."}])
    )
    roles = [m["role"] for m in chat["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user", "assistant", "user"]
    first, second = chat["messages"][3], chat["messages"][4]
    assert (first["tool_call_id"], first["name"], first["content"]) == ("t1", "Read", "A" * 9000)
    assert (second["name"], second["content"]) == ("Bash", "B" * 9000)
    # The image of a tool result rides in the user message after the results.
    assert chat["messages"][5]["content"][-1]["type"] == "image_url"
    assistant = chat["messages"][2]
    assert assistant["content"] == "Reading."  # thinking is the Claude model's own
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["Read", "Bash"]
    assert source.results == {3: (2, 0), 4: (2, 1)}
    assert source.block_of[3] == ("messages", 2, 0)
    assert source.untranslatable == ()


def test_pinch_changes_land_on_exactly_the_tool_result_blocks_they_changed():
    body = body_with(CONVERSATION)
    chat, source = messages_to_chat(body)
    pruned, stats = prune_context(
        chat["messages"], budget_tokens=100, keep_last_turns=1, max_summarize_chars=4000
    )
    assert stats["compressed"] == [2, 3]
    before = json.dumps(body)
    request = native_request(source, chat["messages"], pruned, "claude-real")
    assert json.dumps(body) == before  # the client's body is not touched
    sent = request.body
    assert sent["model"] == "claude-real"
    for t in (1, 3, 4):
        assert json.dumps(sent["messages"][t]["content"]) == json.dumps(
            [{"type": "text", "text": "Done?"}] if t == 3 else CONVERSATION[t]["content"]
        )
    first, second, reminder = sent["messages"][2]["content"]
    assert "chars trimmed" in first["content"] and first["tool_use_id"] == "t1"
    assert list(second) == ["type", "tool_use_id", "is_error", "cache_control", "content"]
    assert second["cache_control"] == MARK and second["is_error"] is True
    assert "chars trimmed" in second["content"][0]["text"]
    assert second["content"][1] == CONVERSATION[2]["content"][1]["content"][1]  # the image
    assert reminder == CONVERSATION[2]["content"][2]


def test_without_changes_every_block_is_the_clients_but_never_the_same_object():
    body = body_with(CONVERSATION)
    chat, source = messages_to_chat(body)
    sent = native_request(source, chat["messages"], chat["messages"], "m").body
    for got, was in zip(sent["messages"][1:], CONVERSATION[1:]):
        blocks = was["content"] if isinstance(was["content"], list) else None
        if blocks is None:
            continue
        assert json.dumps(got["content"]) == json.dumps(blocks)
        assert all(a is not b for a, b in zip(got["content"], blocks))


def test_blocks_a_chat_upstream_has_no_place_for_are_named():
    document = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "x"},
    }
    _, source = messages_to_chat(
        body_with(
            [{"role": "user", "content": [document, {"type": "text", "text": "read"}]}],
            tools=[{"type": "web_search_20250305", "name": "web_search"}],
        )
    )
    assert source.untranslatable == (
        "messages[0].content[0]: 'document'",
        "tools[0]: server tool 'web_search_20250305'",
    )


def test_tools_and_tool_choice_translate():
    chat, _ = messages_to_chat(
        body_with(
            [{"role": "user", "content": "hi"}],
            tools=[{"name": "Read", "description": "read", "input_schema": {"type": "object"}}],
            tool_choice={"type": "any", "disable_parallel_tool_use": True},
            stop_sequences=["END"],
            metadata={"user_id": "u1"},
        )
    )
    assert chat["tools"] == [
        {
            "type": "function",
            "function": {"name": "Read", "parameters": {"type": "object"}, "description": "read"},
        }
    ]
    assert chat["tool_choice"] == "required" and chat["parallel_tool_calls"] is False
    assert (chat["stop"], chat["user"], chat["max_tokens"]) == (["END"], "u1", 100)


@pytest.mark.parametrize(
    "body, message",
    [
        ([], "The body must be a JSON object"),
        ({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}, "model: required"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}]}, "max_tokens: required"),
        ({"model": "m", "max_tokens": 5, "messages": []}, "messages: must have at least 1"),
        (body_with([{"role": "tool", "content": "x"}]), "messages[0].role"),
        (body_with([{"role": "user", "content": 5}]), "messages[0].content"),
        (body_with([{"role": "user", "content": [{"text": "x"}]}]), "messages[0].content[0]"),
        (
            body_with([{"role": "user", "content": [{"type": "tool_result"}]}]),
            "messages[0].content[0].tool_use_id: required",
        ),
        (body_with([{"role": "user", "content": "x"}], stream="yes"), "stream"),
        (body_with([{"role": "user", "content": "x"}], tools=[{}]), "tools[0]"),
    ],
)
def test_bad_bodies_are_refused_naming_the_field(body, message):
    with pytest.raises(TranslationError) as caught:
        messages_to_chat(body)
    assert message in caught.value.message


def test_count_tokens_bodies_need_no_max_tokens():
    chat, _ = messages_to_chat(
        {"model": "m", "messages": [{"role": "user", "content": "x"}]}, count_only=True
    )
    assert "max_tokens" not in chat


def test_a_chat_completion_becomes_a_message_for_the_name_asked():
    message = to_message(
        {
            "choices": [
                {
                    "message": {
                        "content": "Reading.",
                        "tool_calls": [
                            {"id": "c1", "function": {"name": "Read", "arguments": '{"a": 1}'}}
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {
                "prompt_tokens": 100,
                "completion_tokens": 7,
                "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 10},
            },
        },
        "claude-sonnet-4-6",
    )
    sdk.Message.model_validate(message)
    assert message["model"] == "claude-sonnet-4-6"
    assert message["content"] == [
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "c1", "name": "Read", "input": {"a": 1}},
    ]
    assert message["stop_reason"] == "tool_use"
    assert message["usage"] == {
        "input_tokens": 30,
        "cache_creation_input_tokens": 10,
        "cache_read_input_tokens": 60,
        "output_tokens": 7,
    }


@pytest.mark.parametrize(
    "finish, stop", [("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "refusal")]
)
def test_finish_reasons_become_stop_reasons(finish, stop):
    message = to_message({"choices": [{"message": {"content": "x"}, "finish_reason": finish}]}, "m")
    assert message["stop_reason"] == stop


def chunk(delta=None, finish=None, usage=None):
    data = {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}]}
    if usage:
        data = {"choices": [], "usage": usage}
    return data


def test_a_chunk_stream_becomes_messages_events_with_one_block_open_at_a_time():
    events = MessageEvents("claude-x")
    out = events.feed(chunk({"role": "assistant", "content": ""}))
    out += events.feed(chunk({"content": "Let me "}))
    out += events.feed(chunk({"content": "look."}))
    for k, name in enumerate(["Read", "Bash"]):
        start = {"index": k, "id": f"c{k}", "function": {"name": name, "arguments": ""}}
        out += events.feed(chunk({"tool_calls": [start]}))
        out += events.feed(chunk({"tool_calls": [{"index": k, "function": {"arguments": "{}"}}]}))
    out += events.feed(chunk(finish="tool_calls"))
    out += events.feed(chunk(usage={"prompt_tokens": 50, "completion_tokens": 5}))
    out += events.end()
    for event in out:
        EVENT.validate_python(event)
    kinds = [(e["type"], e.get("index")) for e in out]
    assert kinds == [
        ("message_start", None),
        ("content_block_start", 0),
        ("content_block_delta", 0),
        ("content_block_delta", 0),
        ("content_block_stop", 0),
        ("content_block_start", 1),
        ("content_block_delta", 1),
        ("content_block_stop", 1),
        ("content_block_start", 2),
        ("content_block_delta", 2),
        ("content_block_stop", 2),
        ("message_delta", None),
        ("message_stop", None),
    ]
    assert out[-2]["delta"]["stop_reason"] == "tool_use"
    assert out[-2]["usage"]["output_tokens"] == 5 and out[-2]["usage"]["input_tokens"] == 50


# --- The property: whatever the conversation, pinch changes only tool_result content ---

texts = st.text(alphabet="ab \n", min_size=1, max_size=3000)
blocks_for_assistant = st.lists(
    st.one_of(
        texts.map(lambda t: {"type": "text", "text": t}),
        texts.map(lambda t: {"type": "thinking", "thinking": t, "signature": "s" + t[:5]}),
        st.just({"type": "redacted_thinking", "data": "opaque=="}),
    ),
    max_size=3,
)


@st.composite
def conversations(draw):
    messages = [{"role": "user", "content": [{"type": "text", "text": draw(texts)}]}]
    for i in range(draw(st.integers(0, 8))):
        calls = draw(st.integers(1, 3))
        ids = [f"t{i}_{k}" for k in range(calls)]
        content = draw(blocks_for_assistant) + [
            {
                "type": "tool_use",
                "id": tid,
                "name": draw(st.sampled_from(["Read", "Bash"])),
                "input": {"k": draw(texts)},
            }
            for tid in ids
        ]
        messages.append({"role": "assistant", "content": content})
        results = []
        for tid in ids:
            result = {"type": "tool_result", "tool_use_id": tid, "content": draw(texts)}
            if draw(st.booleans()):
                result["cache_control"] = MARK
            results.append(result)
        if draw(st.booleans()):
            results.append({"type": "text", "text": draw(texts)})
        messages.append({"role": "user", "content": results})
    return messages


@settings(max_examples=60, deadline=None)
@given(conversations(), st.integers(50, 3000), st.integers(1, 3))
def test_pinch_never_touches_anything_but_tool_result_content(messages, budget, keep):
    body = body_with(messages)
    snapshot = json.dumps(body)
    chat, source = messages_to_chat(body)
    pruned, _ = prune_context(
        chat["messages"],
        budget_tokens=budget,
        keep_last_turns=keep,
        keep_last_tool_results=keep,
        max_summarize_chars=3000,
        protected_max_chars=3000,
    )
    sent = native_request(source, chat["messages"], pruned, "m").body
    assert json.dumps(body) == snapshot
    assert len(sent["messages"]) == len(messages)
    for got, was in zip(sent["messages"], messages):
        assert got["role"] == was["role"] and len(got["content"]) == len(was["content"])
        for new, old in zip(got["content"], was["content"]):
            if old["type"] == "tool_result":
                assert {k: v for k, v in new.items() if k != "content"} == {
                    k: v for k, v in old.items() if k != "content"
                }
                assert len(new["content"]) <= len(old["content"])
            else:
                assert json.dumps(new) == json.dumps(old)


# --- Hostile bodies: a TranslationError naming the field, never anything else ---

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
block_types = st.sampled_from(["text", "image", "tool_use", "tool_result", "thinking", "document"])
hostile_blocks = st.fixed_dictionaries(
    {"type": block_types},
    optional={
        "text": json_values,
        "source": json_values,
        "id": json_values,
        "name": json_values,
        "input": json_values,
        "tool_use_id": st.text(max_size=3),
        "content": json_values,
        "cache_control": json_values,
    },
)
hostile_bodies = st.fixed_dictionaries(
    {
        "model": st.just("m"),
        "max_tokens": st.just(5),
        "messages": st.lists(
            st.fixed_dictionaries(
                {
                    "role": st.sampled_from(["user", "assistant"]),
                    "content": st.one_of(st.text(max_size=5), st.lists(hostile_blocks, max_size=3)),
                }
            ),
            min_size=1,
            max_size=3,
        ),
    },
    optional={
        "system": json_values,
        "tools": json_values,
        "tool_choice": json_values,
        "metadata": json_values,
        "stop_sequences": json_values,
        "stream": json_values,
        "temperature": json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(hostile_bodies)
def test_any_body_translates_or_is_refused_by_name(body):
    try:
        chat, source = messages_to_chat(body)
    except TranslationError as error:
        assert error.message
        return
    json.dumps(chat)
    native_request(source, chat["messages"], chat["messages"], "m")


# Blocks of every kind a turn holds, valid: those the chat messages carry and those they
# leave out (thinking, documents, server-tool blocks).
words = st.text(max_size=12)
valid_blocks = {
    "text": st.fixed_dictionaries({"type": st.just("text"), "text": words}),
    "image": st.fixed_dictionaries(
        {"type": st.just("image"), "source": st.just({"type": "url", "url": "https://x/y.png"})}
    ),
    "tool_use": st.fixed_dictionaries(
        {"type": st.just("tool_use"), "id": words, "name": words, "input": st.just({"a": 1})}
    ),
    "tool_result": st.fixed_dictionaries(
        {"type": st.just("tool_result"), "tool_use_id": words, "content": words}
    ),
    "thinking": st.fixed_dictionaries(
        {"type": st.just("thinking"), "thinking": words, "signature": words}
    ),
    "document": st.fixed_dictionaries({"type": st.just("document"), "title": words}),
    "server_tool_use": st.fixed_dictionaries(
        {"type": st.just("server_tool_use"), "id": words, "input": st.just({"q": "x"})}
    ),
}
turns = st.one_of(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant"]),
            "content": st.one_of(words, st.lists(st.one_of(*valid_blocks.values()), max_size=4)),
        }
    ),
    st.fixed_dictionaries(
        {"role": st.just("system"), "content": st.lists(valid_blocks["text"], max_size=2)}
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(turns, min_size=1, max_size=5))
def test_the_prompt_left_out_of_the_chat_messages_is_every_block_of_a_type_they_do_not_carry(
    turns,
):
    _, source = messages_to_chat(body_with(turns))
    carried = {"text", "image", "tool_use", "tool_result"}
    left_out = [
        block
        for turn in turns
        for block in blocks_of(turn["content"])
        if block["type"] not in carried
    ]

    assert source.left_out_tokens == sum(value_tokens(block) for block in left_out)


@settings(max_examples=300, deadline=None)
@given(json_values, json_values)
def test_whatever_a_chat_upstream_sends_becomes_a_valid_message_and_events(choices, usage):
    completion = {"choices": choices if isinstance(choices, list) else [choices], "usage": usage}
    sdk.Message.model_validate(to_message(completion, "m"))
    events = MessageEvents("m")
    out = events.feed({"choices": completion["choices"], "usage": usage}) + events.end()
    for event in out:
        EVENT.validate_python(event)
