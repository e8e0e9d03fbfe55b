"""Prometheus exposition, computed from the database at scrape time.

Several gunicorn workers (and several hosts) serve the router, so in-process
counters would each see a slice of the traffic and disagree from scrape to
scrape. Every request is counted in the summary tables (routing/summaries/,
added to in the transaction that records its decision), so a custom collector
reads them on each scrape, with a fixed number of queries on a few hundred rows
whatever the traffic:

1. requests by path, chosen model and status (all time, grouped);
2. one aggregate for the all-time scalars: tokens pinch saved, relevance
   fallbacks, and every bucket of the upstream latency histogram;
3. ``pinch_summary`` for the window gauges (skipped when pinch is off);
4. the window's tool results compressed, by tool (skipped when pinch is off);
5. the limited keys with their refusal counts, and their spend (one query per
   budget period in use; metrics.key_budgets).
6. the quality block (``metrics.quality``: three queries), as ``router_quality_*`` and
   ``router_arm_*`` gauges (``metrics.quality_families``);
7. the savings by cause and the bill (``metrics.savings``).

Counters (``_total``) cover all time, as Prometheus expects of a counter (the
summaries outlive purge_decisions, so a purge never makes one go down); the
``_30d`` gauges cover the ``pinch_summary`` window (the billing period when
``objective.billing_reset_day`` is set).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.db.models import Sum
from django.db.models.functions import Coalesce
from django.utils import timezone
from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.exposition import choose_encoder

from metrics.cache_forecast import cache_forecast
from metrics.key_budgets import key_budget_rows
from metrics.quality import quality_summary
from metrics.quality_families import quality_families
from metrics.report import status_label
from metrics.savings import CAUSES, savings_by_cause
from metrics.summary import pinch_summary, summary_window
from routing.config import RouterConfig
from routing.models import CompressedTools, DecisionSummary
from routing.recording.health import available as recording_available
from routing.summaries.contributions import LATENCY_BUCKETS_SECONDS

NO_MODEL_LABEL = "none"  # the model label of requests where no model ran (nothing answered)


def _all_time_aggregates() -> dict:
    buckets = {
        f"le_{i}": Coalesce(Sum(f"latency_le_{i}"), 0) for i in range(len(LATENCY_BUCKETS_SECONDS))
    }
    return DecisionSummary.objects.order_by().aggregate(
        tokens_saved=Coalesce(Sum("tokens_saved"), 0),
        relevance_fallbacks=Coalesce(Sum("relevance_fallbacks"), 0),
        latency_count=Coalesce(Sum("latency_count"), 0),
        latency_sum_ms=Sum("latency_sum_ms"),
        **buckets,
    )


def _tools_compressed(config: RouterConfig, now: datetime) -> Counter:
    """Tool results compressed in the window, by tool name."""
    rows = (
        summary_window(config, now)
        .summaries(CompressedTools)
        .values_list("tool")
        .annotate(n=Sum("results"))
        .order_by()
    )
    return Counter(dict(rows))


class RouterCollector:
    """A prometheus_client collector whose samples come from the summary tables."""

    def __init__(self, config: RouterConfig, now: datetime | None = None, tenant_labels=True):
        self.config = config
        self.tenant_labels = tenant_labels  # False: no family labelled by tool or key name
        self.now = now or timezone.now()  # one instant for every window family

    def collect(self):
        yield self._requests()
        yield from self._all_time()
        yield GaugeMetricFamily(
            "router_recording_available",
            "1 when this worker can record decisions; 0: it refuses requests "
            "(database and spool both refused a row; routing.serve_unrecorded).",
            value=1 if recording_available() else 0,
        )
        yield GaugeMetricFamily(
            "router_pinch_enabled",
            "1 when pinch prunes requests (pinch.enabled), else 0.",
            value=1 if self.config.pinch.enabled else 0,
        )
        if self.config.pinch.enabled:
            yield from self._pinch_window()
        yield from quality_families(quality_summary(self.config, now=self.now))
        yield from self._savings_by_cause()
        if self.tenant_labels:  # labelled by key name: tenant data
            yield from self._key_limits()

    def _savings_by_cause(self):
        figures = savings_by_cause(self.config, now=self.now)
        yield _gauge_by(
            "cause",
            "router_savings_usd_30d",
            "USD saved in the window by cause: routing (against the baseline model), pinch "
            "(net of the cache) and the prompt cache; with the bill they add up to the "
            "cost without the router or the cache.",
            [(key.removesuffix("_usd_30d"), figures[key]) for key in CAUSES],
        )
        yield GaugeMetricFamily(
            "router_bill_usd_30d",
            "USD billed in the window for prompts and completions (the providers' usage).",
            value=figures["bill_usd_30d"],
        )

    def _key_limits(self):
        spent = GaugeMetricFamily(
            "router_key_spend_usd",
            "USD a limited key spent in its budget period (billed net of the cache, "
            "estimated until usage arrives).",
            labels=["key", "period"],
        )
        budget = GaugeMetricFamily(
            "router_key_budget_usd",
            "A key's budget for its period, by kind (hard: refused past it; soft: warned).",
            labels=["key", "kind"],
        )
        refused = CounterMetricFamily(
            "router_limit_refusals",
            "Requests a limited key's budget or rate limits refused, by reason.",
            labels=["key", "reason"],
        )
        for row in key_budget_rows(self.config, self.now):
            spent.add_metric([row["key"], row["period"]], row["spent_usd"])
            for kind, value in (("hard", row["budget_usd"]), ("soft", row["soft_budget_usd"])):
                if value is not None:
                    budget.add_metric([row["key"], kind], value)
            for reason, count in row["refusals"].items():
                refused.add_metric([row["key"], reason], count)
        yield spent
        yield budget
        yield refused

    def _requests(self):
        family = CounterMetricFamily(
            "router_requests",
            "Requests handled, by path (routed/passthrough), chosen model and HTTP status.",
            labels=["path", "model", "status"],
        )
        rows = (
            DecisionSummary.objects.values_list("path", "chosen_model", "status_code")
            .annotate(n=Sum("decisions"))
            .order_by("path", "chosen_model", "status_code")
        )
        for path, model, status_code, count in rows:
            status = status_label(status_code)
            # A blank model: no model ran (nothing answered), so none is counted.
            family.add_metric([path, model or NO_MODEL_LABEL, status], count)
        return family

    def _all_time(self):
        totals = _all_time_aggregates()
        yield CounterMetricFamily(
            "router_pinch_tokens_saved",
            "Prompt tokens pinch removed before sending, over all recorded decisions.",
            value=totals["tokens_saved"],
        )
        yield CounterMetricFamily(
            "router_pinch_relevance_fallbacks",
            "Requests where relevance ordering failed and pinch pruned uniformly.",
            value=totals["relevance_fallbacks"],
        )
        buckets = [
            (str(seconds), totals[f"le_{i}"]) for i, seconds in enumerate(LATENCY_BUCKETS_SECONDS)
        ]
        buckets.append(("+Inf", totals["latency_count"]))
        yield HistogramMetricFamily(
            "router_upstream_latency_seconds",
            "Upstream provider latency per request, in seconds.",
            buckets=buckets,
            sum_value=(totals["latency_sum_ms"] or 0.0) / 1000,
        )

    def _pinch_window(self):
        summary = pinch_summary(self.config, now=self.now)
        yield GaugeMetricFamily(
            "router_pinch_dollars_saved_usd_30d",
            "USD pinch saved in the window, at each model's blended prompt price.",
            value=summary["dollars_saved_usd_30d"],
        )
        yield GaugeMetricFamily(
            "router_pinch_net_dollars_saved_usd_30d",
            "USD pinch saved in the window net of the prompt cache: estimated unpruned cost "
            "minus the cost of the cache usage the provider reported.",
            value=summary["net_dollars_saved_usd_30d"],
        )
        yield _gauge_by(
            "effect",
            "router_pinch_conversations_30d",
            "Conversations in the window that pinch made cheaper or dearer, net of the cache.",
            [
                ("cheaper", summary["conversations_cheaper_30d"]),
                ("dearer", summary["conversations_dearer_30d"]),
            ],
        )
        yield GaugeMetricFamily(
            "router_pinch_share_pruned_30d",
            "Share of the window's answered requests that pinch pruned (0 to 1).",
            value=summary["share_pruned"],
        )
        yield GaugeMetricFamily(
            "router_pinch_failed_calls_30d",
            "Requests in the window that failed (an error status, or no answer): apart from "
            "the share pruned.",
            value=summary["failed_calls_30d"],
        )
        # Counts and the provider's reasons: no tenant's data in them.
        yield from _forecast_families(cache_forecast(summary_window(self.config, self.now)))
        if not self.tenant_labels:
            return
        yield _gauge_by(
            "tool",
            "router_pinch_tool_results_compressed_30d",
            "Tool results pinch compressed in the window, by tool name.",
            sorted(_tools_compressed(self.config, self.now).items()),
        )


def _gauge_by(label: str, name: str, documentation: str, samples) -> GaugeMetricFamily:
    """A gauge with one label: a sample per (label value, figure) of ``samples``, in order."""
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for value, figure in samples:
        family.add_metric([value], figure)
    return family


def _forecast_families(figures: dict):
    """Predicted against billed (metrics.cache_forecast) as gauges."""
    yield _gauge_by(
        "kind",
        "router_pinch_cache_surprises_30d",
        "Decisions in the window whose billed cache usage contradicted the router's estimate: "
        "miss (predicted warm, billed as written), hit (predicted cold, billed as read).",
        [("miss", figures["cache_misses_30d"]), ("hit", figures["cache_unexpected_hits_30d"])],
    )
    yield GaugeMetricFamily(
        "router_pinch_conversations_surprised_30d",
        "Conversations in the window with at least one cache surprise.",
        value=figures["conversations_surprised_30d"],
    )
    yield _gauge_by(
        "reason",
        "router_pinch_cache_miss_reasons_30d",
        "Decisions in the window by the provider's reported cache-miss reason.",
        figures["cache_miss_reasons_30d"].items(),
    )


def exposition(
    config: RouterConfig, accept: str = "", now: datetime | None = None, tenant_labels=True
):
    """(body, content type): OpenMetrics when ``accept`` asks for it, else Prometheus text."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RouterCollector(config, now, tenant_labels))
    encode, content_type = choose_encoder(accept or "")
    return encode(registry), content_type
