"""The recall tool for a Responses client: a native Responses upstream, or a chat one translated."""

import json

import pytest

from routing.models import RouteDecision
from routing.recall import TOOL_NAME
from tests.support.recall_scenario import (
    RESPONSES_TOOLS,
    model_like,
    recall_pinch,
    responses_conversation,
)
from tests.support.recall_upstream import VAULT_LINE
from tests.support.router import openai_client

pytestmark = pytest.mark.django_db(transaction=True)

# A model on the upstream's Responses API (native), one on its chat completions (translated).
UPSTREAMS = {"native": "recall-native", "translated": "recall-model"}


@pytest.fixture
def sdk(live_server, api_key, responses_config_data, write_config):
    data = recall_pinch(responses_config_data)
    for kind in ("recall", "recallmixed"):
        data["models"] += [
            model_like(data, "native-echo", f"{kind}-native"),
            model_like(data, "echo-medium", f"{kind}-model"),
        ]
    write_config(data)
    return openai_client(live_server, api_key)


def _ask(sdk, model: str, stream: bool):
    """(the response as the client got it, the raw events of a stream)."""
    request = {"model": model, "input": responses_conversation(), "tools": RESPONSES_TOOLS}
    if not stream:
        return sdk.responses.create(**request), []
    events = list(sdk.responses.create(**request, stream=True))
    completed = [e for e in events if e.type == "response.completed"]
    assert len(completed) == 1
    return completed[0].response, events


def _trace(response) -> list:
    """Every mention of the router's tool in a response as a client reads it."""
    dumped = response.model_dump()
    return [k for k in ("output", "tools") if TOOL_NAME in json.dumps(dumped.get(k))]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("kind", sorted(UPSTREAMS))
def test_a_responses_client_gets_one_clean_response_with_the_recalled_line(sdk, kind, stream):
    response, events = _ask(sdk, UPSTREAMS[kind], stream)

    assert VAULT_LINE in response.output_text
    assert [i.type for i in response.output if i.type == "function_call"] == []
    assert _trace(response) == []
    if kind == "native":
        assert response.output_text.count("Let me read the whole log.") == 1
    if stream:
        numbers = [e.sequence_number for e in events]
        assert numbers == list(range(len(numbers)))
        assert [e.type for e in events].count("response.created") == 1
        assert all(TOOL_NAME not in e.model_dump_json() for e in events)
        added = [e.output_index for e in events if e.type == "response.output_item.added"]
        assert added == list(range(len(added)))
    row = RouteDecision.objects.get()
    assert row.recalls == 1 and row.recalled_tokens > 0
    assert row.completion_tokens == response.usage.output_tokens


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("kind", sorted(UPSTREAMS))
def test_a_stored_response_keeps_no_trace_of_the_router_tool(sdk, kind, stream):
    response, _ = _ask(sdk, UPSTREAMS[kind], stream)

    stored = sdk.responses.retrieve(response.id)
    assert VAULT_LINE in stored.output_text
    assert _trace(stored) == []


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("kind", sorted(UPSTREAMS))
def test_a_recall_beside_an_agent_call_leaves_no_call_for_the_responses_client(sdk, kind, stream):
    model = UPSTREAMS[kind].replace("recall", "recallmixed")
    response, _ = _ask(sdk, model, stream)

    assert VAULT_LINE in response.output_text
    assert [i for i in response.output if i.type == "function_call"] == []
