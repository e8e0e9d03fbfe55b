"""The summary tables hold what the raw log says, and every surface reading them shows what it
showed when it summed the log: on random traffic (keys, models, arms, statuses, days), rows
recorded late and out of order, through the spool and replayed, across a purge and a change of
billing day."""

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metrics import prometheus
from metrics.cache_forecast import cache_forecast
from metrics.dashboard import daily_savings
from metrics.quality import quality_summary
from metrics.report import request_totals
from metrics.savings import savings_by_cause
from metrics.summary import pinch_summary, summary_window
from routing.auth import create_api_key
from routing.limits.budgets import budget_period, spend_by_key
from routing.models import (
    PERIOD_DAY,
    PERIOD_MONTH,
    PERIOD_WEEK,
    ApiKey,
    QualityUnit,
    RouteDecision,
)
from routing.recording import spool
from routing.summaries.purge import purge_decisions
from routing.summaries.writes import TABLES, recompute
from tests.support import raw_figures as raw
from tests.support.decisions import decision, seed

pytestmark = pytest.mark.django_db

# Midnight today: the windows and the purge's cutoff fall on the summaries' hours and days.
NOW = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
ARMS = {"c1": "control", "c2": "holdout", "c3": "fast-arm"}
MODELS = ("qwen-small", "gpt-4.1-mini", "gpt-4.1", "retired-model", "")
PERIODS = (PERIOD_DAY, PERIOD_WEEK, PERIOD_MONTH)
usd = st.integers(0, 2_000_000).map(lambda n: n / 1_000_000)
count = st.one_of(st.none(), st.integers(0, 9))


def _part_of(whole: str, part: str, draw) -> dict:
    """A count and a part of it (errors among results, repeats among results seen)."""
    total = draw(count)
    return {whole: total, part: None if total is None else draw(st.integers(0, total))}


@st.composite
def rows(draw, max_days):
    pinch = draw(st.one_of(st.none(), st.tuples(st.integers(0, 400_000), st.integers(0, 400_000))))
    billed = draw(st.one_of(st.none(), st.tuples(usd, usd)))
    forecast = draw(
        st.one_of(
            st.none(),
            st.tuples(
                st.integers(0, 9_000),
                st.integers(0, 9_000),
                st.integers(0, 9_000),
                st.one_of(st.none(), st.integers(0, 9_000)),
                st.sampled_from(["", "miss", "hit"]),
                st.sampled_from(["", "ttl", "evicted"]),
            ),
        )
    )
    conversation = draw(st.sampled_from(["", *ARMS]))
    fields = {
        "age": timedelta(days=draw(st.integers(0, max_days)), minutes=draw(st.integers(1, 1439))),
        "path": draw(st.sampled_from([RouteDecision.PATH_ROUTED, RouteDecision.PATH_PASSTHROUGH])),
        "chosen_model": draw(st.sampled_from(MODELS)),
        "baseline_model": draw(st.sampled_from(["", "gpt-4.1", "retired-model"])),
        "status_code": draw(st.sampled_from([200, 200, 429, 502, None])),
        "conversation": conversation,
        # A conversation keeps its arm (routing/experiments.py); rows without one vary.
        "arm": ARMS.get(conversation) or draw(st.sampled_from(list(ARMS.values()))),
        # And its answers ask for tools or not (c1 stops mid loop), so no tie of two rows
        # at one time decides what its latest answer was.
        "answer_tool_calls": conversation == "c1",
        "quality_task": draw(st.one_of(st.none(), st.integers(0, 3))),
        "estimated_cost_usd": draw(usd),
        "prompt_tokens": draw(st.one_of(st.none(), st.integers(0, 200_000))),
        "completion_tokens": draw(st.one_of(st.none(), st.integers(0, 9_000))),
        "upstream_latency_ms": draw(st.one_of(st.none(), st.floats(0, 400_000, allow_nan=False))),
        "relevance_fallback": draw(st.booleans()),
        "usage_estimated": draw(st.booleans()),
        "pinch_tools": draw(
            st.one_of(
                st.none(),
                st.dictionaries(st.sampled_from(["bash", "read", "grep"]), st.integers(1, 5)),
            )
        ),
        **_part_of("quality_seen_compressed", "quality_repeats_compressed", draw),
        **_part_of("quality_seen_whole", "quality_repeats_whole", draw),
        **_part_of("quality_results", "quality_errors", draw),
        "recalls": draw(count),
        "recalled_tokens": draw(st.one_of(st.none(), st.integers(0, 40_000))),
    }
    if pinch is not None:
        final, removed = pinch
        fields.update(pinch_original_tokens=final + removed, pinch_final_tokens=final)
    if billed is not None:
        fields.update(billed_prompt_cost_usd=billed[0], unpruned_cost_usd=billed[1])
    if forecast is not None:
        read, write, uncached, billed_read, surprise, reason = forecast
        fields.update(
            predicted_cache_read_tokens=read,
            predicted_cache_write_tokens=write,
            predicted_uncached_tokens=uncached,
            cache_read_tokens=billed_read,
            cache_surprise=surprise,
            cache_miss_reason=reason,
        )
    key = draw(st.sampled_from([None, 0, 1, 2]))
    how = draw(st.sampled_from(["recorded", "spooled", "replayed"]))
    return fields, key, how


def _columns(row: RouteDecision) -> dict:
    return {f.attname: getattr(row, f.attname) for f in RouteDecision._meta.concrete_fields}


def record(traffic, keys) -> None:
    """Each row as the router writes one: at once, through the spool, or at once and then
    replayed from the spool (a drain that died after its commit)."""
    for fields, key, how in traffic:
        row = decision(now=NOW, api_key=None if key is None else keys[key], **fields)
        if how == "spooled":
            spool.spool(_columns(row))
            continue
        seed(row)
        if how == "replayed":
            spool.spool(_columns(row))
    spool.drain(raise_errors=True)


def assert_surfaces_match_the_log(config, keys):
    window = summary_window(config, NOW)
    summary = pinch_summary(config, now=NOW)
    raw.assert_same(summary, {**raw.pinch_summary(config, window), **_reset_dates(window)}, "pinch")
    exact = raw.exact_median_saved(window)
    assert summary["median_tokens_saved"] <= exact <= summary["median_tokens_saved"] * 1.01 + 1e-9
    raw.assert_same(
        savings_by_cause(config, now=NOW), raw.savings_by_cause(config, window), "causes"
    )
    raw.assert_same(cache_forecast(window), raw.cache_forecast(window), "forecast")
    quality = quality_summary(config, now=NOW)
    raw.assert_same(quality, raw.quality_summary(config, window), "quality")
    totals = request_totals(window)
    del totals["since"]
    raw.assert_same(totals, raw.request_totals(window), "requests")
    assert prometheus._tools_compressed(config, NOW) == raw.tools_compressed(window)
    _assert_chart_matches(window, config)
    states = spend_by_key(keys, config, NOW)
    for key in keys:
        start = budget_period(key.budget_period, config, NOW).start
        expected = raw.key_spend(config, [key.pk], start).get(key.pk, 0.0)
        assert states[key.pk].spent_usd == pytest.approx(expected, abs=1e-9), key.budget_period


def _reset_dates(window) -> dict:
    if window.reset_date is None:
        return {}
    return {
        "reset_date": window.reset_date.isoformat(),
        "next_reset_date": window.next_reset_date.isoformat(),
    }


def _assert_chart_matches(window, config):
    points = daily_savings(window, config)
    hourly = bool(points) and points[0].hourly
    tokens, net = Counter(), Counter()
    for (hour, _), (saved, saved_net) in raw.hourly_savings(window).items():
        bucket = hour if hourly else hour.date()
        tokens[bucket] += saved
        net[bucket] += saved_net
    assert {p.day: p.tokens for p in points if p.tokens} == dict(tokens)
    for point in points:
        assert point.net_dollars == pytest.approx(net[point.day], abs=1e-9)


def prometheus_all_time() -> Counter:
    figures = Counter()
    for sample in (
        prometheus.RouterCollector.__new__(prometheus.RouterCollector)._requests().samples
    ):
        labels = sample.labels
        figures[("requests", labels["path"], labels["model"], labels["status"])] += sample.value
    totals = prometheus._all_time_aggregates()
    for name in ("tokens_saved", "relevance_fallbacks", "latency_count"):
        figures[name] += totals[name]
    figures["latency_sum_ms"] += totals["latency_sum_ms"] or 0.0
    for i in range(len(prometheus.LATENCY_BUCKETS_SECONDS)):
        figures[f"le_{i}"] += totals[f"le_{i}"]
    return +figures


def assert_counters(shown: Counter, expected: Counter):
    assert set(shown) == set(+expected)
    for name, value in expected.items():
        assert shown[name] == pytest.approx(value, rel=1e-9, abs=1e-6), name


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    before=st.lists(rows(max_days=45), max_size=30),
    late=st.lists(rows(max_days=30), max_size=20),
    reset_days=st.tuples(st.integers(1, 31), st.integers(1, 31)),
    periods=st.tuples(*[st.sampled_from(PERIODS)] * 3),
)
def test_the_summaries_and_every_surface_agree_with_the_raw_log(
    write_default_config, before, late, reset_days, periods
):
    RouteDecision.objects.all().delete()
    for table in (*TABLES, QualityUnit):
        table.objects.all().delete()
    keys = [create_api_key(f"team-{i}")[0] for i in range(3)]
    for key, period in zip(keys, periods, strict=True):
        ApiKey.objects.filter(pk=key.pk).update(budget_period=period)
        key.budget_period = period
    rolling = write_default_config()
    billed_monthly = write_default_config({"objective.billing_reset_day": reset_days[0]})

    record(before, keys)

    everything = NOW - timedelta(days=60)
    raw.assert_same(raw.stored_summaries(everything), raw.recomputed_summaries(everything))
    assert_counters(prometheus_all_time(), raw.all_time())
    for config in (rolling, billed_monthly):
        assert_surfaces_match_the_log(config, keys)

    cutoff = NOW - timedelta(days=31)
    purged = raw.all_time(RouteDecision.objects.filter(created_at__lt=cutoff))
    kept_before_cutoff = raw.stored_summaries(everything)["DecisionSummary"]
    purge_decisions(31)
    # Late rows (hours, days), in any order, some replayed; and the billing day changes.
    record(late, keys)
    moved = write_default_config({"objective.billing_reset_day": reset_days[1]})

    raw.assert_same(raw.stored_summaries(cutoff), raw.recomputed_summaries(cutoff))
    # Prometheus's counters never go down: what the purge took is still counted.
    assert_counters(prometheus_all_time(), raw.all_time() + purged)
    for config in (rolling, billed_monthly, moved):
        assert_surfaces_match_the_log(config, keys)

    # A rebuild from the log changes nothing, and leaves the purged days' counters as they were.
    stored = raw.stored_summaries(everything)
    recompute()
    raw.assert_same(raw.stored_summaries(everything), stored)
    assert {
        dims: figures
        for dims, figures in raw.stored_summaries(everything)["DecisionSummary"].items()
        if dims[0] < cutoff
    } == {dims: figures for dims, figures in kept_before_cutoff.items() if dims[0] < cutoff}
