"""A conversation (and a task of it) counts once, in the hour of its latest decision, with the
figures of its life (routing/summaries/units.py): it moves as it goes on, as its net changes
sign, and as a purge takes its oldest decisions."""

from datetime import UTC, datetime, timedelta

import pytest

from metrics.summary import pinch_summary
from routing.models import ArmHour, QualityUnit
from routing.summaries.contributions import NO_TASK
from routing.summaries.purge import purge_decisions
from tests.support.decisions import decision, seed

pytestmark = pytest.mark.django_db

NOW = datetime.now(UTC).replace(minute=30, second=0, microsecond=0)


def _turn(age: timedelta, billed: float, unpruned: float, **fields):
    return decision(
        now=NOW,
        age=age,
        conversation="c1",
        arm="control",
        billed_prompt_cost_usd=billed,
        unpruned_cost_usd=unpruned,
        **fields,
    )


def _placed(figure: str) -> dict:
    """{hour: figure} over ArmHour's rows that hold some of it."""
    rows = ArmHour.objects.filter(**{f"{figure}__gt": 0}).values_list("hour", figure)
    return dict(rows)


def test_a_conversation_counts_once_in_the_hour_of_its_latest_decision():
    seed(_turn(timedelta(hours=3), 0.001, 0.002))
    assert _placed("conversations") == {(NOW - timedelta(hours=3)).replace(minute=0): 1}

    seed(_turn(timedelta(hours=1), 0.001, 0.002))

    assert _placed("conversations") == {(NOW - timedelta(hours=1)).replace(minute=0): 1}
    assert _placed("cost_usd") == {(NOW - timedelta(hours=1)).replace(minute=0): 0.002}


def test_a_late_row_adds_to_the_conversation_and_leaves_it_at_its_latest_hour():
    seed(_turn(timedelta(hours=1), 0.001, 0.002))

    seed(_turn(timedelta(hours=5), 0.003, 0.004))  # recorded late: it happened before

    assert _placed("conversations") == {(NOW - timedelta(hours=1)).replace(minute=0): 1}
    unit = QualityUnit.objects.get(conversation="c1", task=NO_TASK)
    assert (unit.decisions, unit.billed_usd) == (2, pytest.approx(0.004))
    assert unit.last_at == NOW - timedelta(hours=1)


def test_a_conversation_whose_net_turns_negative_moves_from_cheaper_to_dearer(default_config):
    seed(_turn(timedelta(hours=2), 0.001, 0.002))  # pinch saved $0.001
    summary = pinch_summary(default_config, now=NOW)
    assert (summary["conversations_cheaper_30d"], summary["conversations_dearer_30d"]) == (1, 0)

    seed(_turn(timedelta(hours=1), 0.004, 0.002))  # and then cost $0.002 more

    summary = pinch_summary(default_config, now=NOW)
    assert (summary["conversations_cheaper_30d"], summary["conversations_dearer_30d"]) == (0, 1)
    assert sum(ArmHour.objects.values_list("cheaper", flat=True)) == 0


def test_a_purge_takes_its_decisions_out_of_a_conversation_that_goes_on():
    seed(
        _turn(timedelta(days=40), 0.009, 0.001),  # dearer, and purged
        _turn(timedelta(hours=1), 0.001, 0.002),
    )
    assert _placed("dearer")

    purge_decisions(31)

    unit = QualityUnit.objects.get(conversation="c1", task=NO_TASK)
    assert (unit.decisions, unit.net_usd) == (1, pytest.approx(0.001))
    assert _placed("cheaper") == {(NOW - timedelta(hours=1)).replace(minute=0): 1}
    assert not _placed("dearer")


def test_a_conversation_whose_decisions_are_all_purged_goes():
    seed(_turn(timedelta(days=40), 0.001, 0.002, quality_task=0))

    purge_decisions(31)

    assert not QualityUnit.objects.exists()
    assert not ArmHour.objects.exists()


def test_a_conversation_pruned_once_counts_as_pruned_in_the_hour_of_its_latest_decision():
    seed(_turn(timedelta(hours=3), 0.001, 0.002, saved=500, recalls=1))
    seed(_turn(timedelta(hours=1), 0.001, 0.002, saved=0))  # measured, not pruned

    three_hours_ago = (NOW - timedelta(hours=3)).replace(minute=0)
    assert _placed("pruned") == {three_hours_ago: 1}  # the decision stays in its own hour
    assert _placed("recalls") == {three_hours_ago: 1}
    assert _placed("pruned_conversations") == {(NOW - timedelta(hours=1)).replace(minute=0): 1}


def test_a_conversation_whose_pruned_decisions_are_purged_is_no_longer_pruned():
    seed(
        _turn(timedelta(days=40), 0.001, 0.002, saved=500),  # pruned, and purged
        _turn(timedelta(hours=1), 0.001, 0.002, saved=0),
    )
    assert _placed("pruned_conversations")

    purge_decisions(31)

    assert QualityUnit.objects.get(conversation="c1", task=NO_TASK).pruned == 0
    assert not _placed("pruned_conversations")
    assert not _placed("pruned")


def test_a_failed_pruned_decision_does_not_make_its_conversation_pruned():
    seed(_turn(timedelta(hours=1), 0.001, 0.002, saved=500, status_code=502))

    assert not _placed("pruned_conversations")
    assert not _placed("pruned")
