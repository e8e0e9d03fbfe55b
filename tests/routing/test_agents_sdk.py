"""The openai-agents SDK's default model (Responses API) runs a multi-tool task via the router.

The agent's model client is pointed at the router; the test upstream's script
answers with calls to the agent's two function tools, one per turn, then with
the final answer. The SDK runs each tool itself and sends its result back as
a ``function_call_output``; tracing is off, so nothing leaves the machine.
"""

import json

import pytest
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.models.openai_provider import OpenAIProvider
from agents.models.openai_responses import OpenAIResponsesModel
from agents.run import RunConfig
from openai import AsyncOpenAI

from routing.models import RouteDecision
from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV, responses_config

pytestmark = pytest.mark.django_db(transaction=True)

FINAL = "It is 21C in Lisbon, and 21 + 21 = 42."
SCRIPT = [
    {"call": "get_weather", "arguments": {"city": "Lisbon"}},
    {"call": "add", "arguments": {"a": 21, "b": 21}},
    {"text": FINAL},
]


def test_an_agent_calls_two_tools_through_the_router_and_answers(
    live_server, upstream, write_config, monkeypatch, api_key
):
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    write_config(responses_config("http://127.0.0.1:9/unused", upstream.base_url))
    upstream.script = SCRIPT
    set_tracing_disabled(True)
    calls = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        calls.append(("get_weather", city))
        return f"21C and sunny in {city}"

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        calls.append(("add", a, b))
        return a + b

    client = AsyncOpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)
    # The SDK's default provider and model kind: the Responses API.
    provider = OpenAIProvider(openai_client=client)
    assert isinstance(provider.get_model("script-agent"), OpenAIResponsesModel)
    agent = Agent(name="helper", instructions="Use the tools.", tools=[get_weather, add])
    result = Runner.run_sync(
        agent,
        "Weather in Lisbon, and what is 21 + 21?",
        run_config=RunConfig(model="script-agent", model_provider=provider),
    )

    assert result.final_output == FINAL
    assert calls == [("get_weather", "Lisbon"), ("add", 21, 21)]
    chat = [json.loads(r["body"]) for r in upstream.received]
    assert len(chat) == 3
    assert all(r["path"] == "/v1/chat/completions" for r in upstream.received)
    tool_results = [m["content"] for m in chat[-1]["messages"] if m["role"] == "tool"]
    assert tool_results == ["21C and sunny in Lisbon", "42"]
    assert RouteDecision.objects.filter(status_code=200).count() == 3
