"""The quality signals end to end: scripted agents that re-fetch, err and stop mid-loop.

Real HTTP: the agent (the openai SDK, tests/support/scripted_agent.py) talks
to the router, the router to the scripted test upstream; what the decisions
record and what pinch_summary --json, /metrics and the dashboard show are
read back as a user would.
"""

import json
from datetime import timedelta
from io import StringIO

import openai
import pytest
from django.core.management import call_command
from django.utils import timezone

from metrics.quality import quality_summary
from routing.config.store import current_config
from routing.models import RouteDecision
from tests.support.scripted_agent import run_agent

pytestmark = pytest.mark.django_db(transaction=True)

FILES = {
    name: f"# {name}\n" + "\n".join(f"line {i} of {name}" for i in range(600))
    for name in ("a.py", "b.py", "c.py", "d.py")
}


def reads(*paths):
    return [{"call": "read", "arguments": {"path": path}} for path in paths]


# Four reads; d.py again while its result is still whole (the baseline); a.py
# again once pinch has compressed it (a re-fetch); a file that is not there
# (a tool error after a prune); then the answer.
REFETCHING_AGENT = [
    *reads("a.py", "b.py", "c.py", "d.py", "d.py", "a.py", "missing.py"),
    {"text": "Fixed."},
]


@pytest.fixture
def sdk(live_server, api_key):
    return openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)


@pytest.fixture
def agent_config(router_config, write_config, upstream):
    router_config["models"].append(
        {
            "id": "script-agent",
            "provider": "up",
            "tier": "medium",
            "context_window": 200000,
            "prompt_price": 1.0,
            "cached_prompt_price": 0.25,
            "completion_price": 4.0,
            "capabilities": ["tools"],
        }
    )
    # Over budget from the second read on; the last two results stay whole.
    router_config["pinch"].update(budget_tokens=1000, keep_last_tool_results=2)
    write_config(router_config)
    upstream.script = REFETCHING_AGENT
    return router_config


def rows():
    return list(RouteDecision.objects.order_by("created_at", "id"))


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_re_read_of_a_compressed_result_counts_as_a_refetch_beside_the_baseline(
    sdk, agent_config, stream
):
    messages = run_agent(sdk, "script-agent", "fix the bug", FILES, stream=stream)
    assert messages[-1]["content"].strip() == "Fixed."

    decisions = rows()
    assert len(decisions) == 8
    # The request after the agent read d.py again: d.py's result was whole.
    assert decisions[5].quality_repeats_whole == 1
    assert decisions[5].quality_repeats_compressed == 0
    # The request after it read a.py again: pinch had compressed a.py's result.
    assert decisions[6].quality_repeats_compressed == 1
    assert decisions[6].quality_seen_compressed > 0
    assert [d.quality_calls for d in decisions] == [0, 1, 1, 1, 1, 1, 1, 1]
    assert all(d.quality_task == 1 for d in decisions)
    assert [d.answer_tool_calls for d in decisions] == [True] * 7 + [False]

    out = StringIO()
    call_command("pinch_summary", "--json", stdout=out)
    quality = json.loads(out.getvalue())["quality"]
    assert quality["refetches"] == 1
    assert quality["baseline_refetches"] == 1
    assert 0 < quality["refetch_rate"] <= 1
    assert (
        quality["refetch_interval"][0] <= quality["refetch_rate"] <= quality["refetch_interval"][1]
    )
    assert quality["turns_per_task"]["value"] == 8
    assert quality["arms"]["control"]["conversations"] == 1


def test_a_tool_error_after_a_prune_is_counted_after_the_prune(sdk, agent_config):
    run_agent(sdk, "script-agent", "fix the bug", FILES)

    erring = rows()[7]
    assert erring.quality_errors == 1
    assert erring.quality_results == 1
    assert erring.quality_seen_compressed > 0
    quality = quality_summary(current_config())
    assert quality["tool_errors_after_prune"]["value"] > 0
    assert quality["tool_errors_otherwise"]["value"] == 0


def test_a_conversation_that_stops_mid_tool_loop_is_counted_once_it_stays_quiet(sdk, agent_config):
    run_agent(sdk, "script-agent", "fix the bug", FILES)
    run_agent(sdk, "script-agent", "another task", FILES, stop_after=3)

    last = rows()[-1]
    assert last.answer_tool_calls is True
    config = current_config()
    assert quality_summary(config)["conversations_stopped_mid_loop"] == 0  # it may come back
    later = timezone.now() + timedelta(hours=2)
    assert quality_summary(config, now=later)["conversations_stopped_mid_loop"] == 1


def test_the_quality_card_and_prometheus_show_the_refetch_figures(
    sdk, agent_config, client, admin_user
):
    run_agent(sdk, "script-agent", "fix the bug", FILES)

    client.force_login(admin_user)
    page = client.get("/dashboard/").content.decode()
    assert 'data-testid="quality-card"' in page
    assert "(1 repeats)" in page
    text = client.get("/metrics", HTTP_ACCEPT="text/plain").content.decode()
    assert 'router_quality_refetch_rate_30d{bound="value",seen="compressed"}' in text
    assert 'router_arm_conversations_30d{arm="control"} 1.0' in text
