"""The recall tool on chat completions: the router answers it, the client sees one clean answer."""

import json
from types import SimpleNamespace

import pytest

from routing.recall import TOOL_NAME
from tests.support.config import claude_model
from tests.support.recall_scenario import (
    AGENT_TOOLS,
    chat_conversation,
    model_like,
    recall_pinch,
)
from tests.support.recall_upstream import VAULT_LINE
from tests.support.router import only_decision, openai_client

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def recall_config(router_config, write_config):
    data = recall_pinch(router_config)
    data["models"] += [
        model_like(data, "echo-medium", "recall-model"),
        model_like(data, "echo-medium", "recallmixed-model"),
    ]
    write_config(data)
    return data


def _sdk(live_server, api_key):
    return openai_client(live_server, api_key)


def test_a_model_recalling_a_trimmed_result_answers_with_its_line_in_one_answer(
    live_server, api_key, recall_config, upstream
):
    answer = _sdk(live_server, api_key).chat.completions.create(
        model="recall-model", messages=chat_conversation(), tools=AGENT_TOOLS
    )

    choice = answer.choices[0]
    assert VAULT_LINE in choice.message.content
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    first, second = upstream.bodies()
    assert VAULT_LINE not in json.dumps(first), "pinch trimmed the vault line away"
    assert VAULT_LINE in json.dumps(second["messages"][-1])
    row = only_decision()
    assert row.recalls == 1
    assert row.recalled_tokens > 0
    # Usage is the sum of both upstream calls (11 prompt and 7 completion tokens each).
    assert (row.prompt_tokens, row.completion_tokens) == (22, 14)
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (22, 14)


def test_a_streamed_recall_reaches_the_client_as_one_clean_stream(
    live_server, api_key, recall_config, upstream
):
    stream = _sdk(live_server, api_key).chat.completions.create(
        model="recall-model",
        messages=chat_conversation(),
        tools=AGENT_TOOLS,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)

    deltas = [c.choices[0].delta for c in chunks if c.choices]
    text = "".join(d.content or "" for d in deltas)
    assert VAULT_LINE in text
    assert not any(d.tool_calls for d in deltas)
    assert [d.role for d in deltas if d.role] == ["assistant"]
    assert [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ] == ["stop"]
    usage = [c.usage for c in chunks if c.usage]
    assert len(usage) == 1
    row = only_decision()
    assert row.recalls == 1
    assert (usage[0].prompt_tokens, usage[0].completion_tokens) == (22, 14)
    assert (row.prompt_tokens, row.completion_tokens) == (22, 14)
    assert len(upstream.bodies()) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_recall_called_beside_an_agent_tool_is_answered_first_the_client_sees_the_continuation(
    live_server, api_key, recall_config, upstream, stream
):
    sdk = _sdk(live_server, api_key)
    request = {"model": "recallmixed-model", "messages": chat_conversation(), "tools": AGENT_TOOLS}
    if stream:
        chunks = list(sdk.chat.completions.create(**request, stream=True))
        deltas = [c.choices[0].delta for c in chunks if c.choices]
        text = "".join(d.content or "" for d in deltas)
        calls = [call for d in deltas for call in d.tool_calls or ()]
    else:
        message = sdk.chat.completions.create(**request).choices[0].message
        text, calls = message.content, message.tool_calls or []

    assert VAULT_LINE in text
    # The agent's call of the first round was not run by anyone: it never reaches the client.
    assert calls == []
    first, second = upstream.bodies()
    assert [c["function"]["name"] for c in second["messages"][-2]["tool_calls"]] == [TOOL_NAME]
    assert only_decision().recalls == 1


def test_the_tools_block_is_the_same_on_every_request_of_the_conversation_with_the_router_tool_last(
    live_server, api_key, recall_config, upstream
):
    sdk = _sdk(live_server, api_key)
    opening = chat_conversation()[:1]
    sdk.chat.completions.create(model="echo-medium", messages=opening, tools=AGENT_TOOLS)
    sdk.chat.completions.create(
        model="recall-model", messages=chat_conversation(), tools=AGENT_TOOLS
    )

    blocks = [json.dumps(body["tools"]) for body in upstream.bodies()]
    assert len(set(blocks)) == 1, "nothing trimmed yet or a recall round: the same bytes"
    names = [t["function"]["name"] for t in upstream.bodies()[0]["tools"]]
    assert names == ["read_log", "list_dir", TOOL_NAME]


def test_a_conversation_with_pinch_off_is_not_offered_the_router_tool(
    live_server, api_key, recall_config, write_config, upstream
):
    recall_config["pinch"]["enabled"] = False
    write_config(recall_config)
    answer = _sdk(live_server, api_key).chat.completions.create(
        model="recall-model", messages=chat_conversation(), tools=AGENT_TOOLS
    )

    assert json.dumps(upstream.bodies()[0]["tools"]) == json.dumps(AGENT_TOOLS)
    assert VAULT_LINE not in (answer.choices[0].message.content or "")
    assert only_decision().recalls is None


def _always_recalling(sdk, config, write_config, upstream, handle: str):
    """Ask a model that calls the router's tool for ``handle`` on every turn (one recall
    a request); its answer."""
    config["pinch"]["recall"]["max_per_request"] = 1
    config["models"].append(model_like(config, "echo-medium", "script-recall"))
    write_config(config)
    upstream.script = [{"call": TOOL_NAME, "arguments": {"id": handle}}]
    return sdk.chat.completions.create(
        model="script-recall", messages=chat_conversation(), tools=AGENT_TOOLS
    )


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_past_the_recall_limit_the_answer_goes_to_the_client_without_the_router_call(
    live_server, api_key, recall_config, write_config, upstream, stream
):
    sdk = _sdk(live_server, api_key)
    if stream:
        sdk.chat.completions.create = _streamed(sdk.chat.completions.create)
    answer = _always_recalling(sdk, recall_config, write_config, upstream, "r2")

    assert answer.choices[0].message.tool_calls is None
    assert answer.choices[0].finish_reason == "stop"
    assert len(upstream.bodies()) == 2
    assert only_decision().recalls == 1


def _streamed(create):
    """``create`` streaming, its chunks put together as a completion is read."""

    def streamed(**request):
        chunks = list(create(**request, stream=True))
        deltas = [c.choices[0] for c in chunks if c.choices]
        calls = [call for d in deltas for call in d.delta.tool_calls or ()]
        finish = [d.finish_reason for d in deltas if d.finish_reason]
        message = SimpleNamespace(tool_calls=calls or None)
        return SimpleNamespace(choices=[SimpleNamespace(message=message, finish_reason=finish[-1])])

    return streamed


def test_a_recall_of_a_result_not_kept_is_answered_plainly_and_the_request_goes_on(
    live_server, api_key, recall_config, write_config, upstream
):
    sdk = _sdk(live_server, api_key)
    answer = _always_recalling(sdk, recall_config, write_config, upstream, "r99")

    told = upstream.bodies()[1]["messages"][-1]
    assert told["role"] == "tool" and "No original is kept under r99" in told["content"]
    assert answer.choices[0].finish_reason == "stop"
    assert only_decision().status_code == 200


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_chat_client_on_a_claude_upstream_gets_the_recall_answered_through_the_translation(
    live_server, api_key, claude_config, write_config, anthropic_upstream, stream
):
    data = recall_pinch(claude_config)
    data["models"].append(claude_model("claude-recall-model"))
    write_config(data)
    sdk = _sdk(live_server, api_key)
    request = {
        "model": "claude-recall-model",
        "messages": chat_conversation(),
        "tools": AGENT_TOOLS,
    }
    if stream:
        chunks = list(sdk.chat.completions.create(**request, stream=True))
        deltas = [c.choices[0].delta for c in chunks if c.choices]
        text = "".join(d.content or "" for d in deltas)
        assert not any(d.tool_calls for d in deltas)
    else:
        message = sdk.chat.completions.create(**request).choices[0].message
        text = message.content
        assert message.tool_calls is None

    assert VAULT_LINE in text
    assert text.count("Let me read the whole log.") == 1
    assert [t["name"] for t in anthropic_upstream.bodies()[0]["tools"]][-1] == TOOL_NAME
    assert only_decision().recalls == 1
