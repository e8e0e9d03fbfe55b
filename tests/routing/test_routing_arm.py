"""A routing experiment: a share of auto conversations one tier down, compared with control.

The arm machinery is issue 20's (routing/experiments.py, metrics/quality.py);
the routing effect is the tier shift (routing.session_routing.shifted), held
through each conversation like any tier.
"""

import pytest

from metrics.quality import quality_summary
from routing.config import validate_config
from routing.models import RouteDecision
from tests.support.router import openai_client

pytestmark = pytest.mark.django_db(transaction=True)

ARM = "auto-one-tier-down"
# Long enough to be a medium task for the heuristic.
TASK = "Please add a --verbose flag to the command line tool and print each step. " * 6
# An agent's tools: without any, a request this short is background work.
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


@pytest.fixture
def arm_config(router_config, write_config):
    router_config["pinch"]["holdout_share"] = 0.0
    router_config["experiments"] = [{"name": ARM, "share": 0.5, "routing": {"tier_shift": -1}}]
    write_config(router_config)
    return validate_config(router_config)


def test_a_routing_arm_runs_one_tier_down_and_shows_its_comparison(
    live_server, arm_config, api_key, upstream, client
):
    sdk = openai_client(live_server, api_key)
    for n in range(30):
        opening = [{"role": "user", "content": f"{TASK} (conversation {n})"}]
        sdk.chat.completions.create(model="auto", messages=opening, tools=TOOLS)
        follow = [
            *opening,
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": TASK},
        ]
        sdk.chat.completions.create(model="auto", messages=follow, tools=TOOLS)

    rows = list(RouteDecision.objects.values_list("arm", "tier", "conversation"))
    tiers = {arm: {tier for a, tier, _ in rows if a == arm} for arm, _, _ in rows}
    assert tiers == {"control": {"medium"}, ARM: {"easy"}}
    # Every turn of a conversation in the same arm; both arms drawn (share 0.5 of 30).
    by_conversation = {}
    for arm, _, conversation in rows:
        by_conversation.setdefault(conversation, set()).add(arm)
    assert all(len(arms) == 1 for arms in by_conversation.values())
    in_arm = sum(1 for arms in by_conversation.values() if ARM in arms)
    assert 5 <= in_arm <= 25

    arms = quality_summary(arm_config)["arms"]
    assert arms["control"]["conversations"] + arms[ARM]["conversations"] == 30
    versus = arms[ARM]["vs_control"]
    assert "cost_per_conversation_usd" in versus and versus["verdict"]
    # The cheaper tier costs less per conversation.
    assert versus["cost_per_conversation_usd"]["value"] < 0
    assert client.get("/metrics").json()["quality"]["arms"][ARM]["conversations"] == in_arm
