"""bench/bench_scale.py at a small size, for correctness, not time: the rows it fills (its
summaries through the recording path's own function) give every surface the figures the raw
log gives, and every timed step answers."""

import random
from datetime import UTC, datetime

import pytest

from bench import bench_scale
from metrics.quality import quality_summary
from metrics.savings import savings_by_cause
from metrics.summary import pinch_summary, summary_window
from routing.models import ApiKey, RouteDecision
from tests.support import raw_figures as raw

pytestmark = pytest.mark.django_db
SIZE = 3_000  # about a hundred conversations


def test_a_small_fill_gives_the_figures_of_the_raw_log_and_every_step_answers(
    default_config, settings
):
    settings.METRICS_PUBLIC = True
    keys = [
        ApiKey.objects.create(name=f"team-{i}", key_hash=f"{i:064d}", prefix="rk-").pk
        for i in range(bench_scale.KEYS)
    ]
    # Midnight: the window falls on the summaries' hours and days, as in the raw sums.
    now = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)

    bench_scale.fill(SIZE, random.Random(38), keys, now)

    assert RouteDecision.objects.count() == SIZE
    since = now.replace(year=now.year - 1)
    raw.assert_same(raw.stored_summaries(since), raw.recomputed_summaries(since))
    window = summary_window(default_config, now)
    summary = pinch_summary(default_config, now=now)
    expected = raw.pinch_summary(default_config, window)
    assert summary["calls_30d"] > 0 and summary["pruned_calls_30d"] > 0
    assert summary["failed_calls_30d"] > 0  # the fill's 429s, 502s and unanswered calls
    raw.assert_same(summary, expected, "pinch")
    raw.assert_same(
        savings_by_cause(default_config, now=now),
        raw.savings_by_cause(default_config, window),
        "causes",
    )
    # The quality block's moments, added up by the database, are those of the raw values.
    quality = quality_summary(default_config, now=now)
    assert quality["arms"]["holdout"]["conversations"] > 0
    raw.assert_same(quality, raw.quality_summary(default_config, window), "quality")

    timings = bench_scale.surfaces(repeat=1)

    assert set(timings) >= {"GET /metrics (JSON)", "GET /dashboard/", "request: budget"}
    assert all(ms >= 0 for ms in timings.values())
