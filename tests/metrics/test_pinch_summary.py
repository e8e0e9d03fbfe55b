"""pinch_summary: the savings aggregate every view shows."""

from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest

from metrics.summary import pinch_summary, summary_from_rows
from routing.config.store import current_config
from routing.models import ConfigOverride
from routing.periods import billing_period
from tests.support.decisions import decision, seed

NOW = datetime(2025, 4, 30, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
# The shipped default prices gpt-4.1 prompts at $2.00 per 1M and the cache rate
# is 0, so a saved token is worth $0.000002 in these cases.
EMPTY = {
    "calls_30d": 0,
    "pruned_calls_30d": 0,
    "share_pruned": 0.0,
    "total_tokens_saved": 0,
    "median_tokens_saved": 0.0,
    "dollars_saved_usd_30d": 0.0,
    "unpriced_calls_30d": 0,
    "failed_calls_30d": 0,
    "net_dollars_saved_usd_30d": 0.0,
    "billed_calls_30d": 0,
    "conversations_cheaper_30d": 0,
    "conversations_dearer_30d": 0,
}


def billed(conversation, unpruned, cost, **fields):
    return {
        "conversation": conversation,
        "unpruned_cost_usd": unpruned,
        "billed_prompt_cost_usd": cost,
        **fields,
    }


SUMMARY_CASES = {
    "no rows": ([], EMPTY),
    "net of the cache, per conversation: one cheaper, one dearer": (
        [
            billed("a", 0.5, 0.3, saved=100),
            billed("a", 0.2, 0.25, saved=100),
            billed("b", 0.1, 0.2, saved=10),
            # Sent whole: it cost what it cost, whatever the conversation.
            billed("c", 0.05, 0.05, saved=0),
            # No usage reported: no costs, not billed.
            {"conversation": "a", "saved": 0},
        ],
        {
            **EMPTY,
            "calls_30d": 5,
            "pruned_calls_30d": 3,
            "share_pruned": 0.6,
            "total_tokens_saved": 210,
            "median_tokens_saved": 100.0,
            "dollars_saved_usd_30d": 0.00042,
            "net_dollars_saved_usd_30d": 0.05,
            "billed_calls_30d": 4,
            "conversations_cheaper_30d": 1,
            "conversations_dearer_30d": 1,
        },
    ),
    "pruned, unpruned, grown and unmeasured rows": (
        [
            {"saved": 600},
            {"saved": 300},
            {"saved": 0},
            {"pinch_original_tokens": 100, "pinch_final_tokens": 120},
            {"pinch_original_tokens": None, "pinch_final_tokens": None},
        ],
        {
            **EMPTY,
            "calls_30d": 5,
            "pruned_calls_30d": 2,
            "share_pruned": 0.4,
            "total_tokens_saved": 900,
            "median_tokens_saved": 450.0,
            "dollars_saved_usd_30d": 0.0018,
            "unpriced_calls_30d": 0,
        },
    ),
    # An agent resends a failing call again and again: a burst of 429s must not read as pinch
    # pruning less, nor a failed call's saving as money saved (issue 41).
    "failed calls are counted apart from the share pruned": (
        [
            {"saved": 300},
            {"saved": 0},
            {"saved": 500, "status_code": 502},
            {"saved": 0, "status_code": 429},
            {"saved": 700, "status_code": None},
        ],
        {
            **EMPTY,
            "calls_30d": 2,
            "pruned_calls_30d": 1,
            "share_pruned": 0.5,
            "total_tokens_saved": 300,
            "median_tokens_saved": 300.0,
            "dollars_saved_usd_30d": 0.0006,
            "failed_calls_30d": 3,
        },
    ),
    "odd count takes the middle value": (
        [{"saved": 300}, {"saved": 100}, {"saved": 200}],
        {
            **EMPTY,
            "calls_30d": 3,
            "pruned_calls_30d": 3,
            "share_pruned": 1.0,
            "total_tokens_saved": 600,
            "median_tokens_saved": 200.0,
            "dollars_saved_usd_30d": 0.0012,
        },
    ),
    "even count takes the mean of the middle two": (
        [{"saved": 100}, {"saved": 1000}, {"saved": 199}, {"saved": 50}],
        {
            **EMPTY,
            "calls_30d": 4,
            "pruned_calls_30d": 4,
            "share_pruned": 1.0,
            "total_tokens_saved": 1349,
            "median_tokens_saved": 149.5,
            "dollars_saved_usd_30d": 0.002698,
        },
    ),
    "repeated savings count once per row": (
        [{"saved": 100}, {"saved": 100}, {"saved": 100}, {"saved": 500}],
        {
            **EMPTY,
            "calls_30d": 4,
            "pruned_calls_30d": 4,
            "share_pruned": 1.0,
            "total_tokens_saved": 800,
            "median_tokens_saved": 100.0,
            "dollars_saved_usd_30d": 0.0016,
        },
    ),
    "share is rounded to four places": (
        [{"saved": 30}, {"saved": 0}, {}],
        {
            **EMPTY,
            "calls_30d": 3,
            "pruned_calls_30d": 1,
            "share_pruned": 0.3333,
            "total_tokens_saved": 30,
            "median_tokens_saved": 30.0,
            "dollars_saved_usd_30d": 0.00006,
        },
    ),
    # The window is read in whole hours (the median's histogram in whole days,
    # routing/summaries/): from the hour 30 days back, whose day starts 12 hours before it.
    "rows outside the 30 days are left out": (
        [
            {"saved": 1000, "age": 30 * DAY + timedelta(hours=12, seconds=1)},
            {"saved": 5000, "age": 45 * DAY},
            {"saved": 7000, "age": -DAY},  # after now
            {"saved": 400, "age": 29 * DAY},
            {"saved": 0, "age": 30 * DAY},  # exactly at the window's start: in
        ],
        {
            **EMPTY,
            "calls_30d": 2,
            "pruned_calls_30d": 1,
            "share_pruned": 0.5,
            "total_tokens_saved": 400,
            "median_tokens_saved": 400.0,
            "dollars_saved_usd_30d": 0.0008,
        },
    ),
    "a model no longer configured saves tokens but no dollars": (
        [{"saved": 1000, "chosen_model": "retired-model"}, {"saved": 1000}],
        {
            **EMPTY,
            "calls_30d": 2,
            "pruned_calls_30d": 2,
            "share_pruned": 1.0,
            "total_tokens_saved": 2000,
            "median_tokens_saved": 1000.0,
            "dollars_saved_usd_30d": 0.002,
            "unpriced_calls_30d": 1,
        },
    ),
}


@pytest.mark.parametrize("rows, expected", SUMMARY_CASES.values(), ids=SUMMARY_CASES.keys())
def test_summary_figures(db, default_config, rows, expected):
    seed(*(decision(now=NOW, **row) for row in rows))

    assert pinch_summary(default_config, now=NOW) == expected


def test_it_is_none_when_pinch_is_disabled(db, write_default_config):
    config = write_default_config({"pinch.enabled": False})
    seed(decision(now=NOW, saved=500))

    assert pinch_summary(config, now=NOW) is None


def test_an_admin_override_disabling_pinch_makes_it_none(db, default_config):
    ConfigOverride.objects.create(key="pinch.enabled", value=False)

    assert pinch_summary(current_config()) is None


def test_days_narrows_the_window(db, default_config):
    seed(decision(now=NOW, saved=100, age=6 * DAY), decision(now=NOW, saved=900, age=8 * DAY))

    summary = pinch_summary(default_config, now=NOW, days=7)

    assert (summary["calls_30d"], summary["total_tokens_saved"]) == (1, 100)


def test_days_below_one_is_refused(default_config):
    with pytest.raises(ValueError, match="days must be at least 1"):
        pinch_summary(default_config, now=NOW, days=0)


def test_every_figure_is_a_number(db, write_default_config):
    config = write_default_config({"objective.billing_reset_day": 1})
    seed(decision(saved=500), decision(saved=250), decision(saved=0))

    summary = pinch_summary(config)

    for key, value in summary.items():
        if key in ("reset_date", "next_reset_date"):
            assert date.fromisoformat(value)
        else:
            assert type(value) in (int, float), key


def test_summary_from_rows_weights_each_group_by_its_row_count(default_config):
    # (model, answered, pruned, tokens saved, net, billed, failed): 3 x 100 + 1 x 900 pruned,
    # 4 not, and 2 failed calls apart.
    rows = [("gpt-4.1", 8, 4, 1200, 0.0, 0, 2)]

    summary = summary_from_rows(rows, Counter({100: 3, 900: 1}), default_config)

    assert summary["calls_30d"] == 8
    assert summary["pruned_calls_30d"] == 4
    assert summary["total_tokens_saved"] == 1200
    assert summary["median_tokens_saved"] == 100.0
    assert summary["failed_calls_30d"] == 2


# --- dollars: the blended rate, not the cached rate (the review-caught error) ---


def test_dollars_use_each_rows_model_at_the_blended_rate(db, write_default_config):
    # gpt-4.1:      prompt $2.00, cached $0.50 -> blend 0.75 * 2.00 + 0.25 * 0.50 = $1.625 / 1M
    # gpt-4.1-mini: prompt $0.40, cached $0.10 -> blend 0.75 * 0.40 + 0.25 * 0.10 = $0.325 / 1M
    config = write_default_config({"objective.assumed_cache_rate": 0.25})
    seed(
        decision(now=NOW, chosen_model="gpt-4.1", saved=100_000),
        decision(now=NOW, chosen_model="gpt-4.1", saved=300_000),
        decision(now=NOW, chosen_model="gpt-4.1-mini", saved=200_000),
    )

    dollars = pinch_summary(config, now=NOW)["dollars_saved_usd_30d"]

    # 400k * 1.625 / 1M + 200k * 0.325 / 1M = 0.65 + 0.065
    assert dollars == 0.715
    # The earlier, wrong pricing: every saved token at the cached price alone,
    # which applies the cache discount to the uncached share as well.
    cached_only = (400_000 * 0.50 + 200_000 * 0.10) / 1_000_000
    assert cached_only == pytest.approx(0.22)
    assert dollars != pytest.approx(cached_only)
    # Nor the full price: a quarter of the prompt is assumed to hit the cache.
    full_price = (400_000 * 2.00 + 200_000 * 0.40) / 1_000_000
    assert dollars < full_price


def test_a_model_without_a_cached_price_is_priced_at_its_prompt_price(db, write_default_config):
    config = write_default_config(
        {
            "objective.assumed_cache_rate": 0.5,
            "models": [
                {
                    "id": "no-cache",
                    "provider": "openai",
                    "tier": "medium",
                    "context_window": 8000,
                    "prompt_price": 3.0,
                }
            ],
        }
    )
    seed(decision(now=NOW, chosen_model="no-cache", saved=1_000_000))

    assert pinch_summary(config, now=NOW)["dollars_saved_usd_30d"] == 3.0


# --- billing reset day ---

BILLING_CASES = {
    # name: (reset day, today, last reset, next reset)
    "after the reset day": (15, date(2025, 3, 20), date(2025, 3, 15), date(2025, 4, 15)),
    "on the reset day": (15, date(2025, 3, 15), date(2025, 3, 15), date(2025, 4, 15)),
    "before the reset day": (15, date(2025, 3, 10), date(2025, 2, 15), date(2025, 3, 15)),
    "across the new year": (5, date(2025, 1, 3), date(2024, 12, 5), date(2025, 1, 5)),
    "on the 1st": (1, date(2025, 1, 1), date(2025, 1, 1), date(2025, 2, 1)),
    "31 in April resets on the 30th": (31, date(2025, 4, 30), date(2025, 4, 30), date(2025, 5, 31)),
    "31, the day before April's": (31, date(2025, 4, 29), date(2025, 3, 31), date(2025, 4, 30)),
    "31 in February resets on the 28th": (
        31,
        date(2025, 2, 28),
        date(2025, 2, 28),
        date(2025, 3, 31),
    ),
    "31 before February's reset": (31, date(2025, 2, 27), date(2025, 1, 31), date(2025, 2, 28)),
    "31 in a leap February resets on the 29th": (
        31,
        date(2024, 2, 28),
        date(2024, 1, 31),
        date(2024, 2, 29),
    ),
    "30 on a leap February 29th": (30, date(2024, 2, 29), date(2024, 2, 29), date(2024, 3, 30)),
    "31 on New Year's Eve": (31, date(2024, 12, 31), date(2024, 12, 31), date(2025, 1, 31)),
}


@pytest.mark.parametrize(
    "reset_day, today, last_reset, next_reset", BILLING_CASES.values(), ids=BILLING_CASES.keys()
)
def test_billing_period(reset_day, today, last_reset, next_reset):
    assert billing_period(reset_day, today) == (last_reset, next_reset)


def test_a_reset_day_starts_the_window_at_the_last_reset(db, write_default_config):
    config = write_default_config({"objective.billing_reset_day": 31})
    seed(
        decision(now=NOW, saved=100, age=timedelta(hours=12)),  # 2025-04-30 00:00: in
        decision(now=NOW, saved=900, age=timedelta(hours=12, seconds=1)),  # 04-29 23:59:59: out
    )

    summary = pinch_summary(config, now=NOW, days=30)

    assert summary["calls_30d"] == 1
    assert summary["total_tokens_saved"] == 100
    assert summary["reset_date"] == "2025-04-30"
    assert summary["next_reset_date"] == "2025-05-31"


def test_without_a_reset_day_there_are_no_reset_dates(db, default_config):
    summary = pinch_summary(default_config, now=NOW)

    assert "reset_date" not in summary
    assert "next_reset_date" not in summary
