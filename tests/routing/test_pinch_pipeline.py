"""Pinch in the request path: prune once before measuring, record it, keep the rest intact."""

import json

import openai
import pytest
import requests

from pinch import message_tokens
from pinch.recall import NOTE
from routing.models import RouteDecision
from routing.recall.tool import CHAT_TOOL
from routing.selection import measure_prompt_tokens

pytestmark = pytest.mark.django_db(transaction=True)


def corpus_messages(corpus_dir, name="013.json"):
    return json.loads((corpus_dir / name).read_text())["messages"]


def last_assistant_request(messages):
    """What the agent sent before its last answer: everything up to that answer."""
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return messages[:last]


@pytest.fixture
def sdk(live_server, api_key):
    return openai.OpenAI(
        base_url=live_server.url + "/v1", api_key=api_key, max_retries=0, timeout=30
    )


def test_long_agent_conversation_arrives_upstream_pruned_with_other_messages_intact(
    sdk, router_config, write_config, upstream, corpus_dir
):
    router_config["pinch"]["budget_tokens"] = 20000
    write_config(router_config)
    messages = last_assistant_request(corpus_messages(corpus_dir))
    sdk.chat.completions.create(model="echo-hard", messages=messages)

    sent = upstream.bodies()[0]["messages"]
    assert len(sent) == len(messages)
    changed = [i for i, (a, b) in enumerate(zip(messages, sent)) if a != b]
    assert changed, "a 100k-token conversation over a 20k budget must be pruned"
    assert all(messages[i]["role"] == "tool" for i in changed)
    for original, shipped in zip(messages, sent):
        if original["role"] != "tool":
            assert json.dumps(shipped) == json.dumps(original)
        else:
            assert shipped["tool_call_id"] == original["tool_call_id"]

    decision = RouteDecision.objects.get()
    assert decision.pinch_original_tokens > decision.pinch_final_tokens
    assert decision.pinch_summarized == len(changed)
    sent_tokens = sum(len(m["content"]) // 3 for m in sent)
    assert decision.pinch_final_tokens == sent_tokens
    # The router's measure adds each message's overhead to pinch's characters / 3.
    assert decision.measured_tokens == measure_prompt_tokens(sent, None)
    # The measure counts the calls pinch leaves alone too (pinch.message_tokens).
    assert decision.measured_tokens == sum(message_tokens(m) for m in sent) + 3 * len(sent) + 3
    assert sum(decision.pinch_tools.values()) == len(changed)


def test_routed_window_choice_sees_the_pruned_size(
    sdk, router_config, write_config, upstream, corpus_dir
):
    # Unpruned, the conversation (~42k tokens, 15k of them tool calls, which pinch
    # leaves alone) fits only echo-hard's window; pruned toward 20k it fits the
    # 32k medium models, so the cheapest of them wins.
    # (The classifier is told to call the task medium, not hard.)
    router_config["pinch"]["budget_tokens"] = 20000
    router_config["classifier"] = {
        "heuristic": {
            "hard_context_tokens": 10_000_000,
            "hard_turn_chars": 10_000_000,
            "medium_context_tokens": 10_000_000,
            "medium_turn_chars": 1,
        }
    }
    write_config(router_config)
    messages = corpus_messages(corpus_dir)[:150]  # up to an assistant turn
    reply = sdk.chat.completions.with_raw_response.create(model="auto", messages=messages)
    assert reply.headers["X-Router-Tier"] == "medium"
    assert reply.headers["X-Router-Model"] == "text-only"
    decision = RouteDecision.objects.get()
    assert decision.pinch_final_tokens < decision.measured_tokens <= 32768
    assert decision.pinch_original_tokens > 32768


def test_pinch_disabled_sends_the_callers_messages_byte_for_byte(
    sdk, router_config, write_config, upstream, corpus_dir
):
    router_config["pinch"]["enabled"] = False
    router_config["pinch"]["budget_tokens"] = 1000
    write_config(router_config)
    messages = last_assistant_request(corpus_messages(corpus_dir))
    sdk.chat.completions.create(model="echo-hard", messages=messages)
    received = json.loads(upstream.received[0]["body"])
    assert json.dumps(received["messages"]) == json.dumps(messages)
    decision = RouteDecision.objects.get()
    assert decision.pinch_original_tokens is None
    assert decision.pinch_final_tokens is None
    assert decision.prefix_match is None


def test_pruned_passthrough_records_real_pinch_tokens(sdk, router_config, write_config, corpus_dir):
    router_config["pinch"]["budget_tokens"] = 5000
    write_config(router_config)
    sdk.chat.completions.create(
        model="echo-medium", messages=last_assistant_request(corpus_messages(corpus_dir))
    )
    decision = RouteDecision.objects.get()
    assert decision.path == "passthrough"
    assert decision.pinch_original_tokens > decision.pinch_final_tokens > 0


def test_rejected_passthrough_leaves_no_row_even_when_pruned(
    live_server, api_key, router_config, write_config, corpus_dir, upstream
):
    router_config["pinch"]["budget_tokens"] = 5000
    write_config(router_config)
    body = {
        "model": "text-only",
        "response_format": {"type": "json_object"},
        "messages": last_assistant_request(corpus_messages(corpus_dir)),
    }
    response = requests.post(
        live_server.url + "/v1/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=30,
    )
    assert response.status_code == 422
    assert RouteDecision.objects.count() == 0
    assert upstream.received == []


def test_under_budget_conversation_is_sent_untouched_but_measured(sdk, router_config, upstream):
    messages = [{"role": "user", "content": "hello"}]
    sdk.chat.completions.create(model="echo-medium", messages=messages)
    assert upstream.bodies()[0]["messages"] == messages
    decision = RouteDecision.objects.get()
    assert decision.pinch_original_tokens == decision.pinch_final_tokens == 1


def test_tool_definitions_count_toward_the_budget(sdk, router_config, write_config, upstream):
    router_config["pinch"]["budget_tokens"] = 400
    router_config["pinch"]["keep_last_tool_results"] = 1
    router_config["pinch"]["window_step"] = None  # two results: no room for a step of 8
    router_config["pinch"]["recall"] = {"enabled": True}
    write_config(router_config)
    tools = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": "d" * 300,
                "parameters": {"type": "object"},
            },
        }
        for i in range(4)
    ]
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "tool_0", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 600},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c2", "type": "function", "function": {"name": "tool_1", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "y" * 30},
    ]
    # 200 message tokens alone are under 400; the tool definitions tip it over.
    sdk.chat.completions.create(model="echo-medium", messages=messages, tools=tools)
    sent = upstream.bodies()[0]["messages"]
    # The placeholder, and the handle the model can recall the whole result by.
    assert sent[2]["content"].splitlines() == [
        "[tool_0: result omitted]",
        NOTE.format(handle="r2"),
    ]
    assert sent[4]["content"] == "y" * 30
    decision = RouteDecision.objects.get()
    # The tools as sent: the router's recall tool last among them.
    tools_tokens = len(json.dumps([*tools, CHAT_TOOL])) // 3
    assert decision.pinch_original_tokens == 0 + 200 + 10 + tools_tokens  # "go" is 0 tokens


def test_prefix_probe_measures_three_consecutive_turns(
    sdk, router_config, write_config, corpus_dir
):
    router_config["pinch"]["budget_tokens"] = 20000
    write_config(router_config)
    messages = corpus_messages(corpus_dir)
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"][-3:]
    for t in turns:
        sdk.chat.completions.create(model="echo-hard", messages=messages[:t])
    rows = list(RouteDecision.objects.order_by("id"))
    first, second, third = rows
    assert (first.prefix_match, first.prefix_previous_length, first.prefix_current_length) == (
        0,
        0,
        turns[0],
    )
    assert second.prefix_previous_length == turns[0]
    assert second.prefix_current_length == turns[1]
    assert third.prefix_previous_length == turns[1]
    for row in (second, third):
        assert 0 < row.prefix_match <= row.prefix_previous_length


def test_prefix_probe_off_keeps_no_state_and_null_columns(sdk, router_config, write_config):
    router_config["pinch"]["prefix_probe"] = False
    write_config(router_config)
    for _ in range(2):
        sdk.chat.completions.create(
            model="echo-medium", messages=[{"role": "user", "content": "x"}]
        )
    assert set(RouteDecision.objects.values_list("prefix_match", flat=True)) == {None}


def test_dry_run_explains_the_decision_records_nothing_and_calls_no_upstream(
    live_server, api_key, router_config, write_config, upstream, corpus_dir
):
    router_config["pinch"]["budget_tokens"] = 20000
    write_config(router_config)
    messages = last_assistant_request(corpus_messages(corpus_dir))
    response = requests.post(
        live_server.url + "/v1/chat/completions",
        json={"model": "auto", "messages": messages},
        headers={"Authorization": f"Bearer {api_key}", "X-Router-Dry-Run": "1"},
        timeout=30,
    )
    assert response.status_code == 200
    plan = response.json()
    assert plan["dry_run"] is True
    assert plan["path"] == "routed"
    assert plan["pinch"]["original_tokens"] > plan["pinch"]["final_tokens"]
    assert len(plan["messages"]) == len(messages)
    assert response.headers["X-Router-Pinch-Final-Tokens"] == str(plan["pinch"]["final_tokens"])
    assert response.headers["X-Router-Path"] == "routed"
    assert RouteDecision.objects.count() == 0
    assert upstream.received == []


def test_explain_headers_say_what_the_router_did(sdk, router_config):
    reply = sdk.chat.completions.with_raw_response.create(
        model="echo-medium", messages=[{"role": "user", "content": "x"}]
    )
    headers = reply.headers
    decision = RouteDecision.objects.get()
    assert headers["X-Router-Decision-Id"] == str(decision.pk)
    assert headers["X-Router-Path"] == "passthrough"
    assert headers["X-Router-Pinch-Original-Tokens"] == "0"
    assert headers["X-Router-Pinch-Compressed"] == "0"
    assert headers["X-Router-Relevance"] == "no"


def test_each_request_is_pruned_exactly_once(
    sdk, router_config, write_config, corpus_dir, monkeypatch
):
    from routing import pruning

    calls = []
    real = pruning.prune_context

    def counting(messages, **knobs):
        calls.append(len(messages))
        return real(messages, **knobs)

    monkeypatch.setattr(pruning, "prune_context", counting)
    router_config["pinch"]["budget_tokens"] = 20000
    write_config(router_config)
    messages = last_assistant_request(corpus_messages(corpus_dir))
    sdk.chat.completions.create(model="auto", messages=messages)
    sdk.chat.completions.create(model="echo-hard", messages=messages, stream=True).close()
    assert calls == [len(messages), len(messages)]
