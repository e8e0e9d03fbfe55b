"""The quality block (metrics.quality) as Prometheus gauge families, for the /metrics scrape.

Gauges over the pinch_summary window (``_30d``), labelled by arm where the
figure is per arm; an interval bound that has no sample is left out rather
than exported as a number it is not.
"""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily

# The per-arm figures that are estimates with an interval: (family, its help, the arm's key).
ARM_ESTIMATES = (
    (
        "router_arm_cost_per_conversation_usd_30d",
        "Cost per conversation as billed (cache reads and writes) plus completion, per arm.",
        "cost_per_conversation_usd",
    ),
    ("router_arm_turns_per_task_30d", "Requests per user task, per arm.", "turns_per_task"),
    (
        "router_arm_refetch_rate_30d",
        "Repeats of any earlier tool call per result and turn, per arm.",
        "refetch_rate",
    ),
)


def _estimate(family: GaugeMetricFamily, labels: list[str], estimate: dict) -> None:
    for bound in ("value", "low", "high"):
        if estimate.get(bound) is not None:
            family.add_metric([*labels, bound], estimate[bound])


def quality_families(quality: dict):
    refetch = GaugeMetricFamily(
        "router_quality_refetch_rate_30d",
        "Repeats of a tool call per result and turn the agent saw: compressed (what pinch "
        "cost) or whole (the baseline), with the 95% Wilson interval.",
        labels=["seen", "bound"],
    )
    for seen, rate, interval in (
        ("compressed", quality["refetch_rate"], quality["refetch_interval"]),
        ("whole", quality["baseline_refetch_rate"], quality["baseline_refetch_interval"]),
    ):
        low, high = interval or (None, None)
        _estimate(refetch, [seen], {"value": rate, "low": low, "high": high})
    yield refetch
    errors = GaugeMetricFamily(
        "router_quality_tool_error_rate_30d",
        "Tool results reporting an error, per result: after the agent saw a prune, and otherwise.",
        labels=["after", "bound"],
    )
    _estimate(errors, ["prune"], quality["tool_errors_after_prune"])
    _estimate(errors, ["otherwise"], quality["tool_errors_otherwise"])
    yield errors
    yield GaugeMetricFamily(
        "router_quality_conversations_stopped_mid_loop_30d",
        "Conversations whose last answer asked for tools and that never came back.",
        value=quality["conversations_stopped_mid_loop"],
    )
    conversations = GaugeMetricFamily(
        "router_arm_conversations_30d", "Conversations per arm.", labels=["arm"]
    )
    for arm, figures in quality["arms"].items():
        conversations.add_metric([arm], figures["conversations"])
    yield conversations
    for name, documentation, key in ARM_ESTIMATES:
        family = GaugeMetricFamily(name, documentation, labels=["arm", "bound"])
        for arm, figures in quality["arms"].items():
            _estimate(family, [arm], figures[key])
        yield family
    yield from _recall_families(quality["recall"])


def _recall_families(recall: dict):
    """The recall block (metrics/recall_quality.py) as ``router_recall_*`` gauges."""
    yield GaugeMetricFamily(
        "router_recall_recalls_30d",
        "Calls of the router's recall tool it answered itself: pinch had taken something "
        "the model needed.",
        value=recall["recalls"],
    )
    yield GaugeMetricFamily(
        "router_recall_recalled_tokens_30d",
        "Tokens of the originals the router's recall tool gave back.",
        value=recall["recalled_tokens"],
    )
    per = GaugeMetricFamily(
        "router_recall_recalls_per_30d",
        "Recalls per answered request pinch pruned, and per conversation it pruned.",
        labels=["per"],
    )
    for unit, key in (
        ("pruned_request", "recalls_per_pruned_request"),
        ("conversation", "recalls_per_conversation"),
    ):
        if recall[key] is not None:
            per.add_metric([unit], recall[key])
    yield per
    rate = GaugeMetricFamily(
        "router_recall_rate_30d",
        "Recalls per compressed result and turn seen, beside the holdout's (pinch off) "
        "repeats of an earlier call per result and turn, with the 95% Wilson interval.",
        labels=["of", "bound"],
    )
    _estimate(rate, ["recalls"], recall["recall_rate"])
    _estimate(rate, ["holdout_repeats"], recall["holdout_repeat_rate"])
    yield rate
