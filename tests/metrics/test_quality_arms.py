"""The arms compared: conversations, cost per conversation, turns per task, with intervals."""

from datetime import timedelta

import pytest

from metrics.quality import quality_summary
from tests.support.decisions import decision, seed

pytestmark = pytest.mark.django_db


def conversation(arm, name, turns, cost, repeats=0, seen=10, asked_last=False, age=timedelta(0)):
    """One conversation of ``turns`` requests in one task, billed ``cost`` in all."""
    return [
        decision(
            arm=arm,
            conversation=name,
            quality_task=1,
            billed_prompt_cost_usd=cost / turns,
            unpruned_cost_usd=cost / turns,
            completion_tokens=0,
            quality_repeats_whole=repeats if turn == turns - 1 else 0,
            quality_seen_whole=seen,
            answer_tool_calls=asked_last if turn == turns - 1 else True,
            age=age + timedelta(minutes=turns - turn),
        )
        for turn in range(turns)
    ]


def test_each_arm_has_its_conversations_cost_and_turns_with_intervals(default_config):
    rows = []
    for i in range(30):
        rows += conversation("control", f"c{i}", turns=4 + i % 3, cost=0.30 + (i % 5) / 100)
        rows += conversation("holdout", f"h{i}", turns=4 + i % 3, cost=0.60 + (i % 5) / 100)
    seed(*rows)

    arms = quality_summary(default_config)["arms"]
    assert list(arms)[:2] == ["control", "holdout"]
    control, holdout = arms["control"], arms["holdout"]
    assert control["conversations"] == holdout["conversations"] == 30
    cost = holdout["cost_per_conversation_usd"]
    assert cost["n"] == 30
    assert cost["low"] < cost["value"] < cost["high"]
    assert cost["value"] == pytest.approx(0.62, abs=1e-6)
    assert control["turns_per_task"]["value"] == pytest.approx(5.0)
    versus = holdout["vs_control"]
    assert versus["cost_per_conversation_usd"]["significant"] is True
    assert versus["turns_per_task"]["significant"] is False
    assert versus["verdict"] == "significant: cost_per_conversation_usd"


def test_a_difference_the_sample_cannot_tell_is_said_to_be_not_significant_yet(default_config):
    seed(
        *conversation("control", "c1", turns=5, cost=0.30, repeats=1),
        *conversation("control", "c2", turns=6, cost=0.35),
        *conversation("holdout", "h1", turns=5, cost=0.31),
        *conversation("holdout", "h2", turns=7, cost=0.33, repeats=1),
    )

    versus = quality_summary(default_config)["arms"]["holdout"]["vs_control"]
    assert not any(
        versus[k]["significant"]
        for k in ("cost_per_conversation_usd", "turns_per_task", "refetch_rate")
    )
    assert versus["verdict"].startswith("no difference is significant yet")


def test_an_arm_with_no_traffic_yet_is_listed_with_nothing_known(default_config):
    seed(*conversation("control", "c1", turns=3, cost=0.1))

    holdout = quality_summary(default_config)["arms"]["holdout"]
    assert holdout["conversations"] == 0
    assert holdout["cost_per_conversation_usd"]["value"] is None
    assert holdout["vs_control"]["verdict"].startswith("no difference")


def test_stopped_mid_loop_is_counted_in_the_arm_of_the_conversation(default_config):
    seed(
        *conversation("holdout", "h1", turns=3, cost=0.1, asked_last=True, age=timedelta(hours=3)),
        *conversation("control", "c1", turns=3, cost=0.1, asked_last=False, age=timedelta(hours=3)),
    )

    quality = quality_summary(default_config)
    assert quality["conversations_stopped_mid_loop"] == 1
    assert quality["arms"]["holdout"]["stopped_mid_loop"] == 1
    assert quality["arms"]["control"]["stopped_mid_loop"] == 0
