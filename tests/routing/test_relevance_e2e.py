"""End to end: relevance ordering keeps an old but relevant tool result verbatim."""

import json

import openai
import pytest

from pinch.relevance import reset_relevance_state
from routing.models import RouteDecision

pytestmark = pytest.mark.django_db(transaction=True)

LEDGER = "\n".join(
    f"    def apply_ledger_migration_{i}(self, ledger_entry, currency):  "
    f"# ledger migration step {i} converts currency rounding for payments"
    for i in range(40)
)
NOISE = [
    "\n".join(f"node_modules/left-pad/dist/file_{i}_{j}.js" for j in range(60)) for i in range(5)
]
RECENT = [f"make: Nothing to be done for 'target_{i}'." for i in range(6)]


def call(call_id, name, args):
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ],
    }


def conversation():
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {
            "role": "user",
            "content": "The ledger migration in payments/ledger.py rounds "
            "currency wrong. Fix apply_ledger_migration.",
        },
        call("c0", "read_file", {"path": "payments/ledger.py"}),
        {"role": "tool", "tool_call_id": "c0", "content": LEDGER},
    ]
    for i, text in enumerate(NOISE + RECENT, start=1):
        messages.append(call(f"c{i}", "bash", {"cmd": f"ls {i}"}))
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": text})
    return messages


def send_over_budget(live_server, api_key, router_config, write_config, relevance):
    """Send conversation() with a budget it exceeds by less than the noise weighs."""
    messages = conversation()
    total = sum(len(m["content"]) // 3 for m in messages)
    router_config["pinch"].update(
        {"budget_tokens": total - 2000, "max_summarize_chars": 3000, "relevance": relevance}
    )
    write_config(router_config)
    sdk = openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)
    reply = sdk.chat.completions.create(model="echo-hard", messages=messages)
    return messages, reply


@pytest.fixture(autouse=True)
def fresh_relevance_state():
    reset_relevance_state()
    yield
    reset_relevance_state()


def test_old_relevant_result_survives_while_newer_irrelevant_ones_are_compressed(
    live_server, api_key, router_config, write_config, upstream
):
    relevance = {"enabled": True, "backend": "builtin", "min_candidates": 2}
    messages, _ = send_over_budget(live_server, api_key, router_config, write_config, relevance)

    sent = upstream.bodies()[0]["messages"]
    assert sent[3]["content"] == LEDGER  # the old, relevant file read: verbatim
    noise_indexes = [5, 7, 9, 11, 13]
    assert any(sent[i]["content"] != messages[i]["content"] for i in noise_indexes)
    decision = RouteDecision.objects.get()
    assert decision.relevance_used is True
    assert decision.relevance_fallback is False
    assert decision.pinch_final_tokens <= router_config["pinch"]["budget_tokens"]


def test_without_relevance_the_same_old_result_is_compressed(
    live_server, api_key, router_config, write_config, upstream
):
    send_over_budget(live_server, api_key, router_config, write_config, {"enabled": False})
    assert upstream.bodies()[0]["messages"][3]["content"] != LEDGER
    assert RouteDecision.objects.get().relevance_used is False


def test_a_broken_embedding_server_falls_back_to_uniform_pruning_and_never_fails(
    live_server, api_key, router_config, write_config, upstream, caplog
):
    relevance = {
        "enabled": True,
        "backend": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "timeout_seconds": 1,
    }
    _, reply = send_over_budget(live_server, api_key, router_config, write_config, relevance)
    assert reply.choices[0].message.content
    decision = RouteDecision.objects.get()
    assert (decision.relevance_used, decision.relevance_fallback) == (False, True)
    assert upstream.bodies()[0]["messages"][3]["content"] != LEDGER
    assert "relevance_unavailable" in caplog.text
