"""The median's histogram of tokens saved: round buckets, at most 1 % under each saving, and an
existing histogram regrouped into them by migration 0025 as if its savings were recorded anew."""

from collections import Counter
from datetime import UTC, datetime

import pytest
from django.db import connection
from hypothesis import given
from hypothesis import strategies as st

from routing.models import SavedTokens
from routing.summaries.contributions import saved_bucket

DAY = datetime(2026, 11, 2, tzinfo=UTC)


@given(st.integers(min_value=0, max_value=10**9))
def test_a_saving_is_counted_at_most_one_percent_under_itself(tokens):
    bucket = saved_bucket(tokens)
    assert bucket <= tokens <= bucket * 1.01
    assert saved_bucket(bucket) == bucket
    assert saved_bucket(tokens + 1) >= bucket


@pytest.mark.parametrize(
    "tokens, bucket",
    [(150, 150), (199, 199), (235, 234), (789, 785), (1_000, 1_000), (123_456, 123_000)],
)
def test_a_bucket_reads_as_a_round_number(tokens, bucket):
    assert saved_bucket(tokens) == bucket


def test_a_busy_day_fills_fewer_than_half_the_buckets_it_did():
    savings = range(1_000, 100_000)
    assert len({saved_bucket(tokens) for tokens in savings}) == 700  # 3 significant digits: 1,800


def _old_bucket(tokens):
    """The grain before migration 0025: rounded down to 3 significant digits."""
    unit = 10 ** max(len(str(tokens)) - 3, 0)
    return tokens // unit * unit


BEFORE = [("routing", "0024_speed")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_regroups_a_day_as_if_its_savings_were_recorded_anew():
    from django.db.migrations.executor import MigrationExecutor

    savings = [150, 151, 234, 235, 236, 789, 790, 12_345, 12_399, 987_654]
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    Old = executor.loader.project_state(BEFORE).apps.get_model("routing", "SavedTokens")
    Old.objects.bulk_create(
        Old(day=DAY, bucket=bucket, decisions=n)
        for bucket, n in Counter(_old_bucket(tokens) for tokens in savings).items()
    )

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    kept = dict(SavedTokens.objects.filter(day=DAY).values_list("bucket", "decisions"))
    assert kept == Counter(saved_bucket(tokens) for tokens in savings)
    assert sum(kept.values()) == len(savings)
