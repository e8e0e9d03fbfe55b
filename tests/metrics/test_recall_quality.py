"""The recall figures: counts per pruned request and conversation, the rate beside the holdout's."""

import pytest

from metrics.intervals import wilson
from metrics.recall_quality import RecallSums, recall_figures


def test_recalls_are_counted_per_pruned_request_and_per_conversation():
    figures = recall_figures(
        RecallSums(pruned_requests=40, pruned_conversations=4, recalls=6, recalled_tokens=9000)
    )

    assert figures["recalls"] == 6 and figures["recalled_tokens"] == 9000
    assert figures["recalls_per_pruned_request"] == 0.15
    assert figures["recalls_per_conversation"] == 1.5


def test_nothing_pruned_has_no_rate_rather_than_zero():
    figures = recall_figures(RecallSums())

    assert figures["recalls_per_pruned_request"] is None
    assert figures["recalls_per_conversation"] is None
    assert figures["recall_rate"]["value"] is None
    assert figures["versus_holdout"]["significant"] is False
    assert figures["verdict"].startswith("no comparison yet")


@pytest.mark.parametrize(
    ("recalls", "holdout_repeats", "significant", "verdict"),
    [
        (120, 10, True, "recalls above the natural repeat rate"),
        (11, 10, False, "no significant difference"),
        (1, 60, True, "recalls below the natural repeat rate"),
    ],
    ids=["telling on itself", "as natural", "fewer"],
)
def test_the_recall_rate_is_judged_against_the_holdouts_repeat_rate(
    recalls, holdout_repeats, significant, verdict
):
    sums = RecallSums(
        pruned_requests=500,
        pruned_conversations=20,
        recalls=recalls,
        compressed_seen=1000,
        holdout_repeats=holdout_repeats,
        holdout_seen=1000,
    )

    figures = recall_figures(sums)

    assert figures["recall_rate"] == wilson(recalls, 1000).as_dict()
    assert figures["holdout_repeat_rate"] == wilson(holdout_repeats, 1000).as_dict()
    assert figures["versus_holdout"]["significant"] is significant
    assert figures["verdict"].startswith(verdict)


def test_a_result_recalled_before_it_was_counted_as_seen_still_counts_as_seen():
    # Capped on arrival and recalled in the same request: no turn saw it compressed yet.
    figures = recall_figures(RecallSums(pruned_requests=2, recalls=3, compressed_seen=1))

    assert figures["recall_rate"] == wilson(3, 3).as_dict()
