"""The replay routes too: a tier per request, model changes per session, cost per arm."""

import json
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from routing.config import validate_config
from routing.replay.corpus import Session
from routing.replay.routes import own_prices, route_replay
from routing.replay.sessions import PRICE_MODELS, replay
from tests.support.chat_turns import tool_call_round

TIERS = Path(__file__).resolve().parents[2] / "bench" / "claude_tiers.yaml"
HARD_TASK = (
    "Refactor the scheduler's architecture to remove the race condition in the retry "
    "queue, and design the migration."
)


def loop(start: int, rounds: int) -> list:
    return [
        m for k in range(start, start + rounds) for m in tool_call_round(k, f"line {k}\n" * 900)
    ]


CAT = [{"type": "function", "function": {"name": "cat", "description": "Print a file."}}]


def session(tools=None, tasks=("list the files", HARD_TASK)) -> Session:
    messages = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": tasks[0]},
        *loop(0, 3),
        {"role": "assistant", "content": "Here they are."},
        {"role": "user", "content": tasks[1]},
        *loop(3, 3),
        {"role": "assistant", "content": "Done."},
    ]
    return Session(name="s1", messages=messages, tools=tools)


@pytest.fixture
def config():
    return validate_config(yaml.safe_load(TIERS.read_text()))


def test_each_request_has_its_tier_and_the_session_changes_model_at_the_user_turn(config):
    result = replay([session(tools=CAT)], own_prices(config, PRICE_MODELS[0]))
    routes = [record.route for record in result.records]
    assert [tier for _, tier, _ in routes] == ["easy"] * 4 + ["hard"] * 4
    assert [reason for _, _, reason in routes] == ["start"] + ["held"] * 3 + ["upgraded"] + [
        "held"
    ] * 3
    assert {model for model, _, _ in routes[4:]} == {"claude-opus-4-5"}


@pytest.mark.parametrize("tools_tokens", [0, 20_000])
def test_routing_and_pinch_together_cost_less_than_the_baseline(config, tools_tokens):
    # A hard task, then an easy one: at the user's turn the small model's cold
    # prefix costs less than the big one's reads over the turns to come.
    hard_then_easy = session(tasks=(HARD_TASK, "list the files"))
    arms = route_replay([hard_then_easy], config, PRICE_MODELS[0], tools_tokens)
    assert arms["routing"].reasons["changed"] == 1
    assert arms["baseline"].tiers == {"hard": 8}
    assert arms["routing"].tiers == {"hard": 4, "easy": 4}
    assert arms["routing"].model_changes == 1
    assert arms["routing"].sessions_changed == 1
    assert arms["routing"].usd < arms["baseline"].usd
    assert arms["routing + pinch"].usd <= arms["routing"].usd


def run_command(tmp_path, settings, *options) -> str:
    """``routing_replay`` on a corpus of one file holding ``session()`` (no tools)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "001.json").write_text(json.dumps({"messages": session().messages}))
    settings.ROUTER_CONFIG = str(TIERS)
    out = StringIO()
    call_command("routing_replay", str(corpus), *options, stdout=out)
    return out.getvalue()


def test_the_command_prints_every_arm_under_every_price_model(tmp_path, settings, db):
    text = run_command(tmp_path, settings)
    for prices in PRICE_MODELS:
        assert text.count(prices.label) == 4
    assert "routing + pinch" in text
    assert "1 in 1/1 sessions" in text


def test_the_command_takes_config_keys(tmp_path, settings, db):
    text = run_command(tmp_path, settings, "--set", "routing.session.enabled=false")
    assert "per_request 7, background 1" in text  # the file has no tools
