"""Pinch on a Responses conversation: function_call_output items pruned exactly as tool messages.

The same agent conversation is sent as chat completions and as Responses
items: the decisions carry the same pinch figures and the chat upstream gets
the same tool contents. To an upstream that speaks the Responses API itself,
the pruned outputs go back into the client's own items, and every item pinch
did not touch reaches it as the client sent it.
"""

import json

import openai
import pytest

from routing.models import RouteDecision
from tests.support.config import (
    ANTHROPIC_KEY,
    ANTHROPIC_KEY_ENV,
    PROVIDER_KEY,
    PROVIDER_KEY_ENV,
    responses_config,
)

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 6
TOOL = {
    "type": "function",
    "name": "read_file",
    "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def file_text(k: int) -> str:
    return f"file {k}: " + " ".join(f"line{k}_{n}" for n in range(1500))


def responses_items() -> list:
    items = [{"type": "message", "role": "user", "content": "Read every file, then sum up."}]
    for k in range(ROUNDS):
        arguments = json.dumps({"path": f"f{k}.py"})
        items.append(
            {
                "type": "function_call",
                "call_id": f"c{k}",
                "name": "read_file",
                "arguments": arguments,
            }
        )
        items.append({"type": "function_call_output", "call_id": f"c{k}", "output": file_text(k)})
    return items


def chat_messages() -> list:
    messages = [{"role": "user", "content": "Read every file, then sum up."}]
    for k in range(ROUNDS):
        call = {
            "id": f"c{k}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"f{k}.py"})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append(
            {"role": "tool", "tool_call_id": f"c{k}", "name": "read_file", "content": file_text(k)}
        )
    return messages


@pytest.fixture
def sdk(live_server, upstream, anthropic_upstream, write_config, monkeypatch, api_key):
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, ANTHROPIC_KEY)
    data = responses_config(anthropic_upstream.base_url, upstream.base_url)
    data["pinch"].update(budget_tokens=4000, keep_last_turns=1, keep_last_tool_results=2)
    write_config(data)
    return openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)


def pinch_figures(row):
    return row.pinch_original_tokens, row.pinch_final_tokens, row.pinch_summarized


def test_function_call_outputs_are_pruned_as_tool_messages_are(sdk, upstream):
    chat_tool = {"type": "function", "function": {k: v for k, v in TOOL.items() if k != "type"}}
    sdk.chat.completions.create(model="echo-medium", messages=chat_messages(), tools=[chat_tool])
    sdk.responses.create(model="echo-medium", input=responses_items(), tools=[TOOL], store=False)

    as_chat, as_responses = RouteDecision.objects.order_by("id")
    assert as_chat.pinch_final_tokens < as_chat.pinch_original_tokens
    assert pinch_figures(as_responses) == pinch_figures(as_chat)
    chat_body, responses_body = (json.loads(r["body"]) for r in upstream.received)

    def tool_contents(body):
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]

    assert tool_contents(responses_body) == tool_contents(chat_body)
    # The window keeps the last two results verbatim; the older ones were elided.
    contents = tool_contents(responses_body)
    assert contents[-2:] == [file_text(ROUNDS - 2), file_text(ROUNDS - 1)]
    assert all("chars trimmed" in c for c in contents[:-2])


def test_a_responses_upstream_gets_the_pruned_outputs_in_the_clients_items(sdk, upstream):
    items = responses_items()
    sdk.responses.create(model="native-echo", input=items, tools=[TOOL], store=False)

    [row] = RouteDecision.objects.all()
    assert row.pinch_final_tokens < row.pinch_original_tokens
    sent = json.loads(upstream.received[-1]["body"])["input"]
    assert len(sent) == len(items)
    changed = [i for i, (a, b) in enumerate(zip(items, sent, strict=True)) if a != b]
    # Only old outputs changed, only in their text; every other item as the client sent it.
    assert changed and all(items[i]["type"] == "function_call_output" for i in changed)
    assert changed == [2 * k + 2 for k in range(ROUNDS - 2)]
    for i in changed:
        assert {**sent[i], "output": items[i]["output"]} == items[i]
        assert "chars trimmed" in sent[i]["output"]


def test_with_pinch_off_the_items_reach_a_responses_upstream_as_sent(
    sdk, upstream, write_config, anthropic_upstream
):
    data = responses_config(anthropic_upstream.base_url, upstream.base_url)
    data["pinch"]["enabled"] = False
    write_config(data)
    items = responses_items()
    sdk.responses.create(model="native-echo", input=items, tools=[TOOL], store=False)

    assert json.loads(upstream.received[-1]["body"])["input"] == items
