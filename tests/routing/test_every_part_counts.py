"""Every part of a prompt counts toward a key's tpm and the budget's estimate, on each protocol.

300 KB (some 100k tokens at three characters a token) placed in a part that is
not plain text (a tool call's arguments, a ``tool_use`` input, a document, a
thinking block, a Responses ``function_call`` item, an ``input_text`` part,
an image's data URL) is as much prompt as 300 KB of user text: a key at tpm
2,000 is refused (429) and nothing goes upstream.
"""

import base64

import pytest
import requests

from routing.auth import create_api_key
from routing.models import RouteDecision
from routing.selection import measure_prompt_tokens
from tests.support.anthropic_upstream import SIGNATURE

pytestmark = pytest.mark.django_db(transaction=True)

BIG = "x" * 300_000
IMAGE = "data:image/png;base64," + base64.b64encode(b"\x89PNG" + b"\0" * 225_000).decode()
CALL = {"id": "call_1", "type": "function", "function": {"name": "write", "arguments": BIG}}
TOOLS = [{"type": "function", "function": {"name": "write", "parameters": {"type": "object"}}}]
ANTHROPIC_TOOLS = [{"name": "write", "input_schema": {"type": "object"}}]

CHAT = {
    "tool-call arguments": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        {"role": "user", "content": "next"},
    ],
    "image data URL": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this"},
                {"type": "image_url", "image_url": {"url": IMAGE}},
            ],
        }
    ],
}

MESSAGES = {
    "tool_use input": [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "tu_1", "name": "write", "input": {"x": BIG}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "ok"}],
        },
    ],
    "document": [
        {
            "role": "user",
            "content": [
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": BIG},
                },
                {"type": "text", "text": "summarise"},
            ],
        }
    ],
    "thinking block": [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": BIG, "signature": SIGNATURE},
                {"type": "text", "text": "done"},
            ],
        },
        {"role": "user", "content": "next"},
    ],
    "image data": [
        {
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/png",
                        "data": IMAGE.split(",", 1)[1],
                    },
                },
                {"type": "text", "text": "what is this"},
            ],
        }
    ],
}

RESPONSES = {
    "function_call item": [
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "call_1", "name": "write", "arguments": BIG},
        {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
    ],
    "input_text part": [
        {"role": "user", "content": [{"type": "input_text", "text": BIG}]},
    ],
    "input_image part": [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "what is this"},
                {"type": "input_image", "image_url": IMAGE},
            ],
        }
    ],
}

CASES = (
    [
        ("/v1/chat/completions", {"model": "echo-medium", "messages": m, "tools": TOOLS})
        for m in CHAT.values()
    ]
    + [
        (
            "/v1/messages",
            {"model": model, "max_tokens": 100, "messages": m, "tools": ANTHROPIC_TOOLS},
        )
        for name, m in MESSAGES.items()
        for model in ("claude-echo", "echo-medium")
        if model == "claude-echo" or name != "document"  # a chat upstream cannot take one
    ]
    + [
        (
            "/v1/responses",
            {"model": model, "input": i, "tools": [{**TOOLS[0]["function"], "type": "function"}]},
        )
        for i in RESPONSES.values()
        for model in ("native-echo", "echo-medium")
    ]
)
NAMES = (
    list(CHAT)
    + [
        f"{n} ({m})"
        for n in MESSAGES
        for m in ("native", "over chat")
        if m == "native" or n != "document"
    ]
    + [f"{n} ({m})" for n in RESPONSES for m in ("native", "over chat")]
)


def post(live_server, path: str, body: dict, raw_key: str):
    """The body to ``path`` with the key as both SDKs send it."""
    return requests.post(
        live_server.url + path,
        json=body,
        headers={"Authorization": f"Bearer {raw_key}", "x-api-key": raw_key},
        timeout=30,
    )


@pytest.mark.parametrize("path, body", CASES, ids=NAMES)
def test_a_prompt_part_of_300_kb_is_refused_at_tpm_2000(
    live_server, responses_config_data, upstream, anthropic_upstream, path, body
):
    _, raw = create_api_key("small", limits={"tpm_limit": 2000})

    response = post(live_server, path, body, raw)

    # No wait lets it pass: final, a 400 where opencode's AI SDK or Codex would retry a 429
    # (routing.errors.AGENT_RETRIED_FINALS); Claude Code stops at the 429 (x-should-retry).
    final = 429 if path == "/v1/messages" else 400
    assert response.status_code == final, response.text[:300]
    assert response.headers["x-should-retry"] == "false"
    assert "2000" in response.text
    assert upstream.received == [] and anthropic_upstream.received == []
    assert not RouteDecision.objects.exists()


@pytest.mark.parametrize("messages", list(CHAT.values()), ids=list(CHAT))
def test_the_measure_counts_a_part_as_its_characters(messages):
    assert measure_prompt_tokens(messages, None) >= 300_000 // 3


def test_without_usage_from_the_upstream_the_row_estimates_every_part(
    live_server, router_config, upstream, api_key
):
    body = {"model": "nousage-model", "messages": CHAT["tool-call arguments"], "tools": TOOLS}

    response = post(live_server, "/v1/chat/completions", body, api_key)

    assert response.status_code == 200
    row = RouteDecision.objects.get()
    assert row.usage_estimated and row.prompt_tokens >= 300_000 // 3
    assert row.estimated_cost_usd >= 0.1  # 100k tokens at $1 per million, not 19 tokens' worth
