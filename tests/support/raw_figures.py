"""The figures as the surfaces computed them from the raw decision log, before the summaries.

Tests only: production reads the summary tables (routing/summaries/). These are
the reference the summaries are held to on the same data (tests/routing/
test_summaries_agree.py and the small run of bench/bench_scale.py): each
function is the query a surface ran on the log, and hands its rows to the
same pure arithmetic the surface uses.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from django.db.models import Count, F, Max, OuterRef, Q, Subquery, Sum, Value
from django.db.models.functions import Coalesce, TruncHour

from metrics.cache_forecast import forecast_from_rows
from metrics.intervals import Moments
from metrics.quality import IDLE, ArmSample, quality_from_samples
from metrics.savings import causes_from_rows
from metrics.summary import DOLLAR_DIGITS, Window, summary_from_rows
from routing.cache_forecast import HIT, MISS, SURPRISES
from routing.conversations import FAILED
from routing.models import (
    BILLED,
    NET_SAVED,
    PRUNED,
    TOKENS_SAVED,
    ArmHour,
    QualityUnit,
    RouteDecision,
)
from routing.pricing import PER_TOKENS
from routing.summaries import units
from routing.summaries.contributions import LATENCY_BUCKETS_SECONDS, READS, hour_of, saved_bucket
from routing.summaries.writes import DIMENSIONS, TABLES, config_in_force, summed

# Billed with no cache read or written.
NO_CACHE = (Q(cache_read_tokens__isnull=True) | Q(cache_read_tokens=0)) & (
    Q(cache_write_tokens__isnull=True) | Q(cache_write_tokens=0)
)
COMPARED = Q(
    predicted_cache_read_tokens__isnull=False,
    cache_read_tokens__isnull=False,
    usage_estimated=False,
)


def assert_same(shown, expected, where=""):
    """Equal, floats to the micro-dollar (sums added in another order differ in the last bits)."""
    if isinstance(expected, dict):
        assert set(shown) == set(expected), (where, set(shown) ^ set(expected))
        for k in expected:
            assert_same(shown[k], expected[k], f"{where}.{k}")
    elif isinstance(expected, float):
        assert shown == pytest.approx(expected, abs=2e-6, rel=1e-9), where
    else:
        assert shown == expected, where


def _nonzero(value) -> bool:
    # A float a unit's move subtracted and another added back can keep a residue of 1e-18.
    return abs(value) > 1e-12


def _as_plain(groups) -> dict:
    plain = {key: {k: v for k, v in f.items() if _nonzero(v)} for key, f in groups.items()}
    return {key: figures for key, figures in plain.items() if figures}


def stored_summaries(since) -> dict:
    """{table name: {dimensions: figures}} as the summary tables hold them, from ``since``."""
    result = {}
    for table in TABLES:
        dimensions = DIMENSIONS[table]
        figures = [
            f.column
            for f in table._meta.concrete_fields
            if f.column not in dimensions and f.column != "id"
        ]
        rows = table.objects.filter(**{f"{dimensions[0]}__gte": since}).values()
        result[table.__name__] = _as_plain(
            {tuple(row[d] for d in dimensions): {c: row[c] for c in figures} for row in rows}
        )
    result["QualityUnit"] = {
        (u.pop("conversation"), u.pop("task")): u
        for u in QualityUnit.objects.values(*units.COLUMNS)
    }
    return result


def recomputed_summaries(since) -> dict:
    """The same, summed from the log's rows from ``since``: what a rebuild would write (the
    conversations' and tasks' units from the whole log, placed from ``since``)."""
    log = RouteDecision.objects.filter(created_at__gte=since).values(*READS)
    totals = summed(log)
    folded = {}
    prices = units.completion_prices(config_in_force())
    for fields in RouteDecision.objects.order_by("created_at", "id").values(*READS):
        units.fold(folded, fields, prices)
    placed = units.placed_sums(u for u in folded.values() if hour_of(u["last_at"]) >= since)
    for dimensions, figures in placed.items():
        totals[ArmHour][dimensions].update(figures)
    result = {table.__name__: _as_plain(totals.get(table, {})) for table in TABLES}
    result["QualityUnit"] = {(u.pop("conversation"), u.pop("task")): u for u in folded.values()}
    return result


def pinch_summary(config, window: Window) -> dict:
    answered = ~FAILED
    pruned = window.decisions().filter(answered).pruned().with_tokens_saved()
    histogram = Counter(
        saved_bucket(saved) for saved in pruned.values_list("tokens_saved", flat=True)
    )
    by_model = list(
        window.decisions()
        .values_list("chosen_model")
        .annotate(
            n=Count("id", filter=answered),
            pruned=Count("id", filter=PRUNED & answered),
            saved=Coalesce(Sum(TOKENS_SAVED, filter=PRUNED & answered), 0),
            net=Coalesce(Sum(NET_SAVED), 0.0),
            billed=Count(NET_SAVED),
            failed=Count("id", filter=FAILED),
        )
        .order_by("chosen_model")
    )
    summary = summary_from_rows(by_model, histogram, config)
    rounded = [
        round(unit["net"], DOLLAR_DIGITS)
        for unit in conversation_units(config, window).values()
        if unit["net_rows"]
    ]
    summary.update(
        net_dollars_saved_usd_30d=round(sum(row[4] for row in by_model), DOLLAR_DIGITS),
        billed_calls_30d=sum(row[5] for row in by_model),
        conversations_cheaper_30d=sum(net > 0 for net in rounded),
        conversations_dearer_30d=sum(net < 0 for net in rounded),
    )
    return summary


def _latest(rows, **match):
    """The newest of ``rows`` matching ``match`` (by time, then id), as a subquery's rows."""
    return rows.filter(**match).order_by("-created_at", "-id")


def conversation_units(config, window: Window, task: bool = False) -> dict:
    """Each conversation (``task``: each task of one) whose latest decision is in the window,
    with the figures of all its decisions in the log and its latest decision's arm (the
    newest that names one) and answer: {key: figures}. ``config``: whose prices the
    completions get (None: no cost)."""
    keys = ["conversation", "quality_task"] if task else ["conversation"]
    log = RouteDecision.objects.exclude(conversation="")
    if task:
        log = log.filter(quality_task__isnull=False)
    match = {k: OuterRef(k) for k in keys}
    named = _latest(RouteDecision.objects.exclude(arm=""), **match)
    newest = _latest(RouteDecision.objects.all(), **match)
    units = {}
    for row in (
        log.values(*keys)
        .annotate(
            last_at=Max("created_at"),
            arm=Coalesce(Subquery(named.values("arm")[:1]), Value("")),
            asked=Subquery(newest.values("answer_tool_calls")[:1]),
            rows=Count("id"),
            billed_rows=Count("billed_prompt_cost_usd"),
            billed=Coalesce(Sum("billed_prompt_cost_usd"), 0.0),
            net=Coalesce(Sum(NET_SAVED, filter=BILLED), 0.0),
            net_rows=Count("id", filter=BILLED),
            surprises=Count("id", filter=COMPARED & Q(cache_surprise__in=SURPRISES)),
            tokens=Coalesce(Sum(Coalesce("prompt_tokens", "measured_tokens")), 0),
            pruned=Count("id", filter=PRUNED & ~FAILED),
        )
        .order_by()
    ):
        if hour_of(window.start) <= row["last_at"] <= window.end:
            units[tuple(row[k] for k in keys)] = row
    if config is None:  # the costs are not asked for
        return units
    completions = (
        log.values_list(*keys, "chosen_model").annotate(n=Sum("completion_tokens")).order_by()
    )
    for *key, model_id, tokens in completions:
        if tuple(key) in units:
            model = config.model(model_id)
            price = model.completion_price if model is not None else 0.0
            units[tuple(key)]["billed"] += (tokens or 0) * price / PER_TOKENS
    return units


def quality_summary(config, window: Window) -> dict:
    """The quality block from the log: each arm's conversations and tasks as lists of values,
    made into the same samples (``Moments.of``) the database adds up."""
    after_prune = Q(quality_seen_compressed__gt=0)
    counts = {
        "repeats_compressed": Sum("quality_repeats_compressed"),
        "repeats_whole": Sum("quality_repeats_whole"),
        "seen_compressed": Sum("quality_seen_compressed"),
        "seen_whole": Sum("quality_seen_whole"),
        "results_after_prune": Sum("quality_results", filter=after_prune),
        "errors_after_prune": Sum("quality_errors", filter=after_prune),
        "results": Sum("quality_results"),
        "errors": Sum("quality_errors"),
        "pruned": Count("id", filter=PRUNED & ~FAILED),
        "recalls": Sum("recalls"),
        "recalled_tokens": Sum("recalled_tokens"),
    }
    arm_counts = defaultdict(Counter)
    for arm, *figures in window.decisions().values_list("arm").annotate(**counts).order_by():
        arm_counts[arm].update(dict(zip(counts, (f or 0 for f in figures), strict=True)))
    conversations = defaultdict(list)
    for unit in conversation_units(config, window).values():
        conversations[unit["arm"]].append(unit)
    tasks = defaultdict(list)
    for unit in conversation_units(config, window, task=True).values():
        tasks[unit["arm"]].append((unit["rows"], unit["tokens"]))
    samples = {
        arm: ArmSample(
            conversations=len(conversations[arm]),
            pruned_conversations=sum(u["pruned"] > 0 for u in conversations[arm]),
            cost=Moments.of(u["billed"] for u in conversations[arm] if u["billed_rows"]),
            turns=Moments.of(turns for turns, _ in tasks[arm]),
            task_tokens=Moments.of(tokens for _, tokens in tasks[arm]),
            counts=+arm_counts[arm],
        )
        for arm in {*arm_counts, *conversations, *tasks}
    }
    return quality_from_samples(samples, stopped_from_the_log(config, window), config)


def stopped_from_the_log(config, window: Window) -> dict:
    """{arm: conversations last active in the window whose last answer asked for tools an
    hour or more before its end}, from the log itself."""
    return dict(
        Counter(
            unit["arm"]
            for unit in conversation_units(config, window).values()
            if unit["asked"] and window.end - unit["last_at"] >= IDLE
        )
    )


def exact_median_saved(window: Window) -> float:
    """The median tokens saved over the window's answered pruned rows, exactly (the old
    figure)."""
    values = sorted(
        window.decisions()
        .exclude(FAILED)
        .pruned()
        .with_tokens_saved()
        .values_list("tokens_saved", flat=True)
    )
    if not values:
        return 0.0
    middle = len(values) // 2
    return float(values[middle]) if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def savings_by_cause(config, window: Window) -> dict:
    rows = (
        window.decisions()
        .filter(BILLED)
        .values_list("chosen_model", "baseline_model")
        .annotate(
            decisions=Count("id"),
            prompt=Coalesce(Sum("prompt_tokens"), 0),
            removed=Coalesce(Sum(TOKENS_SAVED, filter=PRUNED), 0),
            completion=Coalesce(Sum("completion_tokens"), 0),
            billed=Sum("billed_prompt_cost_usd"),
            unpruned=Sum("unpruned_cost_usd"),
            uncached_prompt=Coalesce(Sum("prompt_tokens", filter=NO_CACHE), 0),
            uncached_removed=Coalesce(Sum(TOKENS_SAVED, filter=PRUNED & NO_CACHE), 0),
            uncached_unpruned=Coalesce(Sum("unpruned_cost_usd", filter=NO_CACHE), 0.0),
        )
        .order_by("chosen_model", "baseline_model")
    )
    pinch = pinch_summary(config, window)["net_dollars_saved_usd_30d"]
    return causes_from_rows(rows, config, pinch)


def cache_forecast(window: Window) -> dict:
    compared = window.decisions().filter(COMPARED)
    rows = (
        compared.values_list("cache_miss_reason")
        .annotate(
            n=Count("id"),
            misses=Count("id", filter=Q(cache_surprise=MISS)),
            hits=Count("id", filter=Q(cache_surprise=HIT)),
            predicted_read=Sum("predicted_cache_read_tokens"),
            predicted_total=Sum(
                Coalesce("predicted_cache_read_tokens", 0)
                + Coalesce("predicted_cache_write_tokens", 0)
                + Coalesce("predicted_uncached_tokens", 0)
            ),
            billed_read=Sum("cache_read_tokens"),
            billed_total=Coalesce(Sum("prompt_tokens"), 0),
        )
        .order_by()
    )
    units = conversation_units(None, window).values()
    return forecast_from_rows(list(rows), sum(1 for unit in units if unit["surprises"]))


def request_totals(window: Window) -> dict:
    by_path, by_status = Counter(), Counter()
    for path, status, n in (
        window.decisions().values_list("path", "status_code").annotate(n=Count("id")).order_by()
    ):
        by_path[path] += n
        by_status["unknown" if status is None else str(status)] += n
    return {
        "total": sum(by_path.values()),
        "by_path": dict(sorted(by_path.items())),
        "by_status": dict(sorted(by_status.items())),
    }


def all_time(decisions=None) -> Counter:
    """Prometheus's all-time figures: requests by (path, model, status), tokens saved,
    relevance fallbacks and the latency histogram, as one Counter."""
    decisions = RouteDecision.objects.all() if decisions is None else decisions
    figures = Counter()
    for path, model, status, n in (
        decisions.values_list("path", "chosen_model", "status_code")
        .annotate(n=Count("id"))
        .order_by()
    ):
        figures[
            ("requests", path, model or "none", "unknown" if status is None else str(status))
        ] += n
    for saved in decisions.pruned().with_tokens_saved().values_list("tokens_saved", flat=True):
        figures["tokens_saved"] += saved
    figures["relevance_fallbacks"] += decisions.filter(relevance_fallback=True).count()
    for latency in decisions.filter(upstream_latency_ms__isnull=False).values_list(
        "upstream_latency_ms", flat=True
    ):
        figures["latency_count"] += 1
        figures["latency_sum_ms"] += latency
        for i, seconds in enumerate(LATENCY_BUCKETS_SECONDS):
            figures[f"le_{i}"] += latency <= seconds * 1000
    return figures


def tools_compressed(window: Window) -> Counter:
    totals = Counter()
    for tools in (
        window.decisions().filter(pinch_tools__isnull=False).values_list("pinch_tools", flat=True)
    ):
        for name, count in tools.items():
            if isinstance(count, int) and not isinstance(count, bool):
                totals[str(name)] += count
    return totals


def hourly_savings(window: Window) -> dict:
    """{(hour, model): (tokens saved, net USD)} over the answered pruned rows: what the chart
    sums."""
    rows = (
        window.decisions()
        .exclude(FAILED)
        .pruned()
        .annotate(hour=TruncHour("created_at"))
        .values_list("hour", "chosen_model")
        .annotate(saved=Sum(TOKENS_SAVED), net=Coalesce(Sum(NET_SAVED), 0.0))
        .order_by()
    )
    return {(hour, model): (saved, net) for hour, model, saved, net in rows}


def key_spend(config, key_ids, start) -> dict:
    """What routing.limits.budgets summed per key from the log, from ``start``."""
    rows = (
        RouteDecision.objects.filter(api_key_id__in=key_ids, created_at__gte=start)
        .values_list("api_key_id", "chosen_model")
        .annotate(
            prompt=Sum(Coalesce(F("billed_prompt_cost_usd"), F("estimated_cost_usd"))),
            completion=Sum("completion_tokens"),
        )
        .order_by()
    )
    spent = defaultdict(float)
    for key_id, model_id, prompt, completion in rows:
        model = config.model(model_id)
        price = model.completion_price if model is not None else 0.0
        spent[key_id] += (prompt or 0.0) + (completion or 0) * price / PER_TOKENS
    return dict(spent)
