"""An agent's tool definitions (Claude Code's are 82 KB of JSON) are written out once a request
to be counted: the measured prompt, pinch's budget, the router tool's share and the cache
forecast all take that one figure, the same each would have found writing them out itself."""

import json

import pytest

from routing import selection
from routing.cache_forecast import forecast_fields, predicted_split
from routing.config import validate_config
from routing.pipeline import plan_request
from routing.prefix_probe import PrefixProbe
from routing.protocols.chat.request import parse_chat_request
from routing.recall.tool import CHAT_TOOL, tools_sent, tools_sent_chars
from routing.selection import measure_prompt_tokens, tools_chars, tools_overhead_tokens
from tests.support.config import base_config
from tests.support.recall_scenario import AGENT_TOOLS, chat_conversation, recall_pinch

UNICODE_TOOL = {
    "type": "function",
    "function": {"name": "lire_fichier", "description": "Lit un fichier — « tel quel » ✓"},
}


def _config(recall: bool):
    return validate_config(recall_pinch(base_config("http://127.0.0.1:9/v1"), enabled=recall))


@pytest.mark.parametrize(
    "tools", [AGENT_TOOLS, AGENT_TOOLS[:1], [UNICODE_TOOL, *AGENT_TOOLS], [], None]
)
@pytest.mark.parametrize("recall", [True, False])
def test_the_tools_sent_are_the_declared_ones_and_the_router_tool_to_the_character(tools, recall):
    pinch = _config(recall).pinch

    assert tools_sent_chars(tools, pinch, tools_chars(tools)) == tools_chars(
        tools_sent(tools, pinch)
    )


@pytest.mark.parametrize("recall", [True, False])
def test_the_plan_counts_the_tools_as_sent_and_the_forecast_reads_that_figure(recall):
    config = _config(recall)
    messages = chat_conversation()[:1]
    request = parse_chat_request(
        {"model": "echo-medium", "messages": messages, "tools": AGENT_TOOLS}
    )

    plan = plan_request(request, config, api_key_id=7, probe=PrefixProbe())

    sent = [*AGENT_TOOLS, CHAT_TOOL] if recall else AGENT_TOOLS
    assert plan.tools_tokens == tools_overhead_tokens(sent)
    assert plan.measured_tokens == measure_prompt_tokens(messages, sent)
    split = predicted_split(
        plan.send_messages,
        plan.prefix,
        tools_overhead_tokens(sent),
        config.cache_prices(plan.model),
        plan.pinch.cold if plan.pinch is not None else None,
        writes=plan.model.cache is not None,
        sizes=plan.payload_tokens,
    )
    fields = forecast_fields(plan)
    assert (
        fields["predicted_cache_read_tokens"],
        fields["predicted_cache_write_tokens"],
        fields["predicted_uncached_tokens"],
    ) == (split if split is not None else (None, None, None))


def test_a_request_writes_its_tool_definitions_out_once_while_it_is_planned_and_forecast(
    monkeypatch,
):
    config = _config(recall=True)
    request = parse_chat_request(
        {"model": "echo-medium", "messages": chat_conversation(), "tools": AGENT_TOOLS}
    )
    written = []
    dumps = json.dumps

    def counting(value, *args, **kwargs):
        if isinstance(value, list) and value and value[0] is request.tools[0]:
            written.append(len(value))
        return dumps(value, *args, **kwargs)

    monkeypatch.setattr(selection.json, "dumps", counting)
    plan = plan_request(request, config, api_key_id=7, probe=PrefixProbe())
    forecast_fields(plan)

    assert plan.pinch.tokens_saved > 0  # pruned: the payload was measured again too
    assert written == [len(AGENT_TOOLS)]
