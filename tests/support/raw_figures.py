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
from django.db.models import Count, F, Max, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce, TruncHour

from metrics.cache_forecast import forecast_from_rows
from metrics.intervals import Moments
from metrics.quality import IDLE, ArmSample, quality_from_samples
from metrics.savings import causes_from_rows
from metrics.summary import DOLLAR_DIGITS, Window, summary_from_rows
from routing.cache_forecast import HIT, MISS, SURPRISES
from routing.conversations import FAILED
from routing.models import BILLED, NET_SAVED, PRUNED, TOKENS_SAVED, RouteDecision
from routing.pricing import PER_TOKENS
from routing.summaries.contributions import LATENCY_BUCKETS_SECONDS, READS, saved_bucket
from routing.summaries.writes import DIMENSIONS, TABLES, summed

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
        assert set(shown) == set(expected), where
        for k in expected:
            assert_same(shown[k], expected[k], f"{where}.{k}")
    elif isinstance(expected, float):
        assert shown == pytest.approx(expected, abs=2e-6, rel=1e-9), where
    else:
        assert shown == expected, where


def _as_plain(groups) -> dict:
    return {key: {k: v for k, v in figures.items() if v} for key, figures in groups.items()}


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
        result[table.__name__] = {
            tuple(row[d] for d in dimensions): {c: row[c] for c in figures if row[c]}
            for row in rows
        }
    return result


def recomputed_summaries(since) -> dict:
    """The same, summed from the log's rows from ``since``: what a rebuild would write."""
    log = RouteDecision.objects.filter(created_at__gte=since).values(*READS)
    totals = summed(log)
    return {table.__name__: _as_plain(totals.get(table, {})) for table in TABLES}


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
    nets = (
        window.decisions()
        .billed()
        .exclude(conversation="")
        .values_list("conversation")
        .annotate(net=Sum(NET_SAVED))
        .order_by()
    )
    rounded = [round(net, DOLLAR_DIGITS) for _, net in nets]
    summary.update(
        net_dollars_saved_usd_30d=round(sum(row[4] for row in by_model), DOLLAR_DIGITS),
        billed_calls_30d=sum(row[5] for row in by_model),
        conversations_cheaper_30d=sum(net > 0 for net in rounded),
        conversations_dearer_30d=sum(net < 0 for net in rounded),
    )
    return summary


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
    }
    rows = (
        window.decisions()
        .values_list("arm", "conversation", "chosen_model")
        .annotate(
            billed=Sum("billed_prompt_cost_usd"),
            billed_rows=Count("billed_prompt_cost_usd"),
            completion=Sum("completion_tokens"),
            **counts,
        )
        .order_by()
    )
    conversations = defaultdict(lambda: defaultdict(lambda: [0, 0.0]))  # arm: conv: [rows, $]
    arm_counts = defaultdict(Counter)
    for arm, conversation, model_id, billed, billed_rows, completion, *figures in rows:
        model = config.model(model_id)
        price = model.completion_price if model is not None else 0.0
        unit = conversations[arm][conversation]
        unit[0] += billed_rows
        unit[1] += (billed or 0.0) + (completion or 0) * price / PER_TOKENS
        arm_counts[arm].update(dict(zip(counts, (f or 0 for f in figures), strict=True)))
    tasks = defaultdict(list)
    for arm, turns, tokens in (
        window.decisions()
        .filter(quality_task__isnull=False)
        .values_list("arm", "conversation", "quality_task")
        .annotate(turns=Count("id"), tokens=Sum(Coalesce("prompt_tokens", "measured_tokens")))
        .values_list("arm", "turns", "tokens")
        .order_by()
    ):
        tasks[arm].append((turns, tokens))
    samples = {
        arm: ArmSample(
            conversations=len(units),
            cost=Moments.of(cost for billed_rows, cost in units.values() if billed_rows),
            turns=Moments.of(turns for turns, _ in tasks[arm]),
            task_tokens=Moments.of(tokens for _, tokens in tasks[arm]),
            counts=+arm_counts[arm],
        )
        for arm, units in conversations.items()
    }
    return quality_from_samples(samples, stopped_from_the_log(window), config)


def stopped_from_the_log(window: Window) -> dict:
    """{arm: conversations active in the window whose last answer asked for tools an hour or
    more before its end}, from the log itself (what the conversations' rows keep)."""
    latest = RouteDecision.objects.filter(conversation=OuterRef("conversation")).order_by(
        "-created_at", "-id"
    )
    last = (
        window.decisions()
        .exclude(conversation="")
        .values("conversation")
        .annotate(
            last_at=Max("created_at"),
            asked=Subquery(latest.values("answer_tool_calls")[:1]),
            last_arm=Subquery(latest.values("arm")[:1]),
        )
        .values_list("last_arm", "last_at", "asked")
        .order_by()
    )
    return dict(
        Counter(arm for arm, last_at, asked in last if asked and window.end - last_at >= IDLE)
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
    return causes_from_rows(rows, config)


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
    surprised = (
        compared.filter(cache_surprise__in=SURPRISES)
        .exclude(conversation="")
        .values("conversation")
        .distinct()
        .count()
    )
    return forecast_from_rows(list(rows), surprised)


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
