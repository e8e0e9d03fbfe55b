"""The router's recall tool is part of what is sent, so it is part of what is measured: the
prompt's tokens (tpm, the budget estimate, the window, pinch's budget) count it where it is
offered; the conversation key, the prefix figures and the cost without pinch do not. And it
is offered exactly on the requests that declare tools, so a conversation that gains tools
later keeps one tools block from then on."""

import json

import pytest

from routing.config import validate_config
from routing.models import RouteDecision
from routing.pipeline import plan_request
from routing.prefix_probe import PrefixProbe
from routing.protocols.chat.request import parse_chat_request
from routing.recall.tool import CHAT_TOOL
from routing.selection import measure_prompt_tokens, tools_overhead_tokens
from tests.support.config import base_config
from tests.support.recall_scenario import AGENT_TOOLS, chat_conversation, recall_pinch
from tests.support.router import openai_client

pytestmark = pytest.mark.django_db(transaction=True)

OPENING = chat_conversation()[:1]
FOLLOW_UP = [*OPENING, {"role": "assistant", "content": "Reading it."}, OPENING[0]]


@pytest.fixture
def configure(router_config, write_config):
    def configure(recall: bool):
        data = recall_pinch(router_config, enabled=recall)
        data["pinch"]["budget_tokens"] = 50_000  # nothing here is over it: sent as it came
        write_config(data)

    return configure


def _ask(live_server, api_key, messages, tools=None):
    extra = {"tools": tools} if tools else {}
    openai_client(live_server, api_key).chat.completions.create(
        model="echo-medium", messages=messages, **extra
    )
    return RouteDecision.objects.latest("id")


def test_the_router_tool_counts_in_the_measured_prompt_where_it_is_offered(
    live_server, api_key, configure, upstream
):
    configure(recall=True)
    offered = _ask(live_server, api_key, OPENING, AGENT_TOOLS)
    configure(recall=False)
    not_offered = _ask(live_server, api_key, OPENING, AGENT_TOOLS)

    with_tool, without = upstream.bodies()
    assert json.dumps(with_tool["tools"]) == json.dumps([*AGENT_TOOLS, CHAT_TOOL])
    assert offered.measured_tokens == measure_prompt_tokens(OPENING, [*AGENT_TOOLS, CHAT_TOOL])
    assert not_offered.measured_tokens == measure_prompt_tokens(OPENING, AGENT_TOOLS)
    # Pinch's budget counts the tools as sent too.
    assert offered.pinch_original_tokens - not_offered.pinch_original_tokens == (
        tools_overhead_tokens([*AGENT_TOOLS, CHAT_TOOL]) - tools_overhead_tokens(AGENT_TOOLS)
    )
    assert offered.measured_tokens - not_offered.measured_tokens > 200


def test_a_request_without_tools_is_measured_without_the_router_tool(
    live_server, api_key, configure, upstream
):
    configure(recall=True)
    row = _ask(live_server, api_key, OPENING)

    assert "tools" not in upstream.bodies()[0]
    assert row.measured_tokens == measure_prompt_tokens(OPENING, None)
    assert row.recalls is None


def test_the_conversation_key_and_prefix_figures_are_the_same_with_the_tool_as_without(
    live_server, api_key, configure
):
    figures = {}
    for recall in (True, False):
        configure(recall=recall)
        RouteDecision.objects.all().delete()
        for messages in (OPENING, FOLLOW_UP):
            row = _ask(live_server, api_key, messages, AGENT_TOOLS)
        figures[recall] = (
            row.conversation,
            row.prefix_match,
            row.prefix_previous_length,
            row.prefix_current_length,
        )

    assert figures[True] == figures[False]
    assert figures[True][1] == 1  # the second request kept the first's opening


def test_a_conversation_that_gains_tools_keeps_one_tools_block_from_then_on(
    live_server, api_key, configure, upstream
):
    configure(recall=True)
    _ask(live_server, api_key, OPENING)
    _ask(live_server, api_key, FOLLOW_UP, AGENT_TOOLS)
    _ask(
        live_server,
        api_key,
        [*FOLLOW_UP, {"role": "assistant", "content": "ok"}, OPENING[0]],
        AGENT_TOOLS,
    )

    first, *later = upstream.bodies()
    assert "tools" not in first  # no tools of its own: none of ours either
    blocks = {json.dumps(body["tools"]) for body in later}
    assert blocks == {json.dumps([*AGENT_TOOLS, CHAT_TOOL])}
    rows = RouteDecision.objects.order_by("id")
    assert len({row.conversation for row in rows}) == 1


def test_the_cost_without_pinch_leaves_the_router_tool_out():
    # Pinch off sends no tool of the router's: the unpruned estimate is the same either way.
    plans = {}
    for recall in (True, False):
        config = validate_config(recall_pinch(base_config("http://127.0.0.1:9/v1"), enabled=recall))
        request = parse_chat_request(
            {"model": "echo-medium", "messages": chat_conversation(), "tools": AGENT_TOOLS}
        )
        plans[recall] = plan_request(request, config, api_key_id=7, probe=PrefixProbe())

    assert plans[True].pinch.tokens_saved > 0 and plans[False].pinch.tokens_saved > 0
    assert plans[True].pinch.original_tokens > plans[False].pinch.original_tokens
    assert plans[True].unpruned_split == plans[False].unpruned_split
