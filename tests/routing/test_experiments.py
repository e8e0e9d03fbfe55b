"""Arms: a stable share of conversations runs with pinch off (or an experiment's settings)."""

import json
import math

import openai
import pytest

from routing.config import ConfigError, validate_config
from routing.config.store import current_config, set_overrides
from routing.experiments import CONTROL, HOLDOUT, arm_config, arm_names, assign_arm
from routing.models import ApiKey, RouteDecision
from routing.pipeline import plan_request
from routing.prefix_probe import PrefixProbe, conversation_key
from routing.protocols.chat.request import parse_chat_request
from tests.support.config import base_config

KEYS = 20_000  # conversations to assign: 4 standard errors of a 5% share is 0.6 points


def config_with(**changes):
    data = base_config("http://127.0.0.1:9/v1")
    data["pinch"]["holdout_share"] = changes.pop("holdout_share", 0.05)
    data.update(changes)
    return validate_config(data)


def shares(config, keys=KEYS):
    counts = {}
    for n in range(keys):
        arm = assign_arm(config, conversation_key(None, "auto", [], f"conversation-{n}"))
        counts[arm.name] = counts.get(arm.name, 0) + 1
    return counts


def within_binomial(count, n, p, sigmas=4):
    return abs(count - n * p) <= sigmas * math.sqrt(n * p * (1 - p))


def test_holdout_takes_its_share_of_conversations_within_binomial_tolerance():
    counts = shares(config_with(holdout_share=0.05))
    assert within_binomial(counts[HOLDOUT], KEYS, 0.05)
    assert counts[HOLDOUT] + counts[CONTROL] == KEYS


def test_experiments_take_the_slices_after_the_holdout():
    experiments = [
        {"name": "down", "share": 0.1, "routing": {"tier_shift": -1}},
        {"name": "big-budget", "share": 0.2, "pinch": {"budget_tokens": 99000}},
    ]
    counts = shares(config_with(holdout_share=0.05, experiments=experiments))
    assert within_binomial(counts[HOLDOUT], KEYS, 0.05)
    assert within_binomial(counts["down"], KEYS, 0.1)
    assert within_binomial(counts["big-budget"], KEYS, 0.2)
    assert within_binomial(counts[CONTROL], KEYS, 0.65)


def test_every_turn_of_a_conversation_runs_in_the_same_arm():
    config = config_with(holdout_share=0.5)
    probe = PrefixProbe()
    for opening in range(40):
        messages = [{"role": "user", "content": f"task {opening}"}]
        arms = set()
        for turn in range(4):
            request = parse_chat_request({"model": "echo-small", "messages": messages})
            arms.add(plan_request(request, config, api_key_id=7, probe=probe).arm.name)
            messages = [
                *messages,
                {"role": "assistant", "content": f"step {turn}"},
                {"role": "user", "content": "go on"},
            ]
        assert len(arms) == 1


def test_the_holdout_arm_plans_with_pinch_off_and_the_others_keep_it():
    config = config_with(holdout_share=0.05)
    holdout = next(
        arm
        for n in range(1000)
        if (arm := assign_arm(config, conversation_key(None, "m", [], str(n)))).name == HOLDOUT
    )
    assert arm_config(config, holdout).pinch.enabled is False
    assert config.pinch.enabled is True
    assert arm_config(config, assign_arm(config, None)) is config


def test_an_experiment_arm_gets_its_pinch_keys_over_the_effective_block():
    config = config_with(
        holdout_share=0.0,
        experiments=[{"name": "all", "share": 1.0, "pinch": {"payback": {"min_payback": 9}}}],
    )
    arm = assign_arm(config, "any-conversation")
    assert arm.name == "all"
    assert arm.routing.tier_shift == 0
    pinch = arm_config(config, arm).pinch
    assert pinch.payback.min_payback == 9
    assert pinch.budget_tokens == config.pinch.budget_tokens


def test_no_holdout_when_pinch_is_off_or_the_share_is_zero():
    assert shares(config_with(holdout_share=0.0), 2000) == {CONTROL: 2000}
    data = base_config("http://127.0.0.1:9/v1")
    data["pinch"].update(enabled=False, holdout_share=0.5)
    config = validate_config(data)
    assert shares(config, 2000) == {CONTROL: 2000}
    assert arm_names(config) == [CONTROL]


@pytest.mark.parametrize(
    "experiments, holdout, message",
    [
        ([{"name": "a", "share": 0.6}, {"name": "b", "share": 0.5}], 0.0, "add up to 1.1"),
        ([{"name": "holdout", "share": 0.1}], 0.05, "experiments.0.name"),
        ([{"name": "a", "share": 0.1}, {"name": "a", "share": 0.1}], 0.0, "experiments.1.name"),
        ([{"name": "a", "share": 0.1, "pinch": {"budget_tokens": 0}}], 0.0, "budget_tokens"),
        ([{"name": "a", "share": 0.1, "pinch": {"nope": 1}}], 0.0, "experiments.0.pinch.nope"),
        ([{"name": "a", "share": 0.1, "routing": {"nope": 1}}], 0.0, "experiments.0.routing"),
        ([{"name": "Bad Name", "share": 0.1}], 0.0, "experiments.0.name"),
    ],
)
def test_a_bad_arm_is_refused_naming_the_key(experiments, holdout, message):
    with pytest.raises(ConfigError, match=message):
        config_with(holdout_share=holdout, experiments=experiments)


@pytest.mark.django_db
def test_an_admin_override_of_the_holdout_share_applies_on_the_next_request(router_config):
    assert shares(current_config(), 2000) == {CONTROL: 2000}
    set_overrides({"pinch.holdout_share": 1.0})
    assert shares(current_config(), 2000) == {HOLDOUT: 2000}
    with pytest.raises(ConfigError, match="holdout_share"):
        set_overrides({"pinch.holdout_share": 1.5})


def _conversation_in(arm_name, config, api_key_id, model, first_user):
    for n in range(1000):
        opening = f"{first_user} (variant {n})"
        key = conversation_key(api_key_id, model, [{"role": "user", "content": opening}])
        if assign_arm(config, key).name == arm_name:
            return opening
    raise AssertionError(f"no conversation in {arm_name}")


@pytest.mark.django_db(transaction=True)
def test_the_holdout_arms_payload_is_what_the_client_sent_and_the_row_says_holdout(
    live_server, api_key, router_config, write_config, upstream
):
    router_config["pinch"].update(holdout_share=0.5, budget_tokens=1000)
    write_config(router_config)
    config = current_config()
    key_id = ApiKey.objects.get().pk
    sdk = openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)
    big = "x" * 12000
    for arm_name in (HOLDOUT, CONTROL):
        opening = _conversation_in(arm_name, config, key_id, "echo-hard", "fix the bug")
        messages = [
            {"role": "user", "content": opening},
            *[
                m
                for i in range(8)
                for m in (
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": f"c{i}",
                                "type": "function",
                                "function": {"name": "read", "arguments": f'{{"n": {i}}}'},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} {big}"},
                )
            ],
        ]
        sdk.chat.completions.create(model="echo-hard", messages=messages)
        received = json.loads(upstream.received[-1]["body"])["messages"]
        row = RouteDecision.objects.order_by("-id").first()
        assert row.arm == arm_name
        if arm_name == HOLDOUT:
            assert json.dumps(received) == json.dumps(messages)
            assert row.pinch_original_tokens is None
        else:
            assert json.dumps(received) != json.dumps(messages)
            assert row.pinch_original_tokens > row.pinch_final_tokens
