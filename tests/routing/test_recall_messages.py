"""The recall tool for a Claude client: a native Anthropic upstream, or a chat one translated."""

import anthropic
import pytest

from routing.models import RouteDecision
from routing.recall import TOOL_NAME
from tests.support.config import claude_model
from tests.support.recall_scenario import (
    MESSAGES_TOOLS,
    messages_conversation,
    model_like,
    recall_pinch,
)
from tests.support.recall_upstream import VAULT_LINE

pytestmark = pytest.mark.django_db(transaction=True)

# The Claude model on the Anthropic test upstream (native), the chat model (translated).
UPSTREAMS = {"native": "claude-recall", "translated": "recall"}


@pytest.fixture
def claude(live_server, claude_config, write_config, api_key):
    data = recall_pinch(claude_config)
    for kind in ("recall", "recallmixed"):
        data["models"] += [
            claude_model(f"claude-{kind}-model"),
            model_like(data, "echo-medium", f"{kind}-model"),
        ]
    write_config(data)
    return anthropic.Anthropic(base_url=live_server.url, api_key=api_key, max_retries=0, timeout=20)


def _ask(claude, model: str, stream: bool, tools=MESSAGES_TOOLS):
    """(the answer's blocks as the client reads them, its stop reason, every event type seen)."""
    request = {
        "model": model,
        "max_tokens": 1000,
        "messages": messages_conversation(),
        "tools": tools,
    }
    if not stream:
        message = claude.messages.create(**request)
        return message.content, message.stop_reason, [], message.usage
    events = list(claude.messages.create(**request, stream=True))
    with claude.messages.stream(**request) as again:
        message = again.get_final_message()
    return message.content, message.stop_reason, events, message.usage


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("kind", sorted(UPSTREAMS))
def test_a_claude_client_gets_one_clean_answer_with_the_recalled_line(claude, kind, stream):
    content, stop, events, usage = _ask(claude, f"{UPSTREAMS[kind]}-model", stream)

    text = "".join(b.text for b in content if b.type == "text")
    assert VAULT_LINE in text
    if kind == "native":
        # What the model wrote before its call reached the client once, not again.
        assert text.count("Let me read the whole log.") == 1
    assert [b.type for b in content if b.type == "tool_use"] == []
    assert stop == "end_turn"
    if stream:
        kinds = [e.type for e in events]
        assert kinds.count("message_start") == 1 and kinds.count("message_stop") == 1
        starts = [e.content_block for e in events if e.type == "content_block_start"]
        assert all(b.type != "tool_use" for b in starts)
        indexes = [e.index for e in events if e.type == "content_block_start"]
        assert indexes == list(range(len(indexes)))
    rows = only_decision_per_request(2 if stream else 1)
    assert all(row.recalls == 1 and row.recalled_tokens > 0 for row in rows)
    assert rows[-1].completion_tokens == usage.output_tokens


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("kind", sorted(UPSTREAMS))
def test_a_recall_beside_a_claude_clients_tool_leaves_no_call_for_the_client(claude, kind, stream):
    model = UPSTREAMS[kind].replace("recall", "recallmixed") + "-model"
    content, stop, _, _ = _ask(claude, model, stream)

    assert VAULT_LINE in "".join(b.text for b in content if b.type == "text")
    assert all(b.type != "tool_use" for b in content)
    assert stop == "end_turn"


def test_the_native_upstream_is_offered_the_router_tool_last(claude, anthropic_upstream):
    _ask(claude, "claude-recall-model", stream=False)

    for body in anthropic_upstream.bodies():
        assert [t["name"] for t in body["tools"]] == ["read_log", "list_dir", TOOL_NAME]


def only_decision_per_request(count: int):
    rows = list(RouteDecision.objects.order_by("id"))
    assert len(rows) == count, rows
    return rows


def test_a_cache_mark_on_the_router_tool_belongs_to_its_request_alone(claude, anthropic_upstream):
    # Tools long enough to be cached: the provider marks a cache breakpoint on the last
    # tool, the router's. A later request whose tools are too short to cache has none.
    long_tools = [{**tool, "description": "Use it well. " * 400} for tool in MESSAGES_TOOLS]
    _ask(claude, "claude-recall-model", stream=False, tools=long_tools)
    assert "cache_control" in anthropic_upstream.bodies()[-1]["tools"][-1]
    _ask(claude, "claude-recall-model", stream=False)

    assert "cache_control" not in anthropic_upstream.bodies()[-1]["tools"][-1]
