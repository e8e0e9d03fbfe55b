"""The Prometheus exposition: families and values computed from the decision rows."""

from datetime import timedelta

import pytest
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from metrics.summary import pinch_summary
from routing.models import ConfigOverride, RouteDecision
from tests.support.decisions import decision, seed


@pytest.fixture
def decisions(db):
    return seed(
        decision(saved=600, upstream_latency_ms=200, pinch_tools={"read_file": 3, "bash": 1}),
        decision(saved=0, upstream_latency_ms=800, relevance_fallback=True, pinch_tools={}),
        decision(
            saved=200,
            path=RouteDecision.PATH_PASSTHROUGH,
            chosen_model="gpt-4.1-mini",
            status_code=502,
            upstream_latency_ms=3000,
            pinch_tools={"read_file": 2},
        ),
        decision(status_code=None),
        # 40 days old: in the all-time counters, not in the 30-day gauges.
        decision(
            saved=5000,
            age=timedelta(days=40),
            upstream_latency_ms=100_000,
            relevance_fallback=True,
            pinch_tools={"grep": 7},
        ),
    )


TOKEN = "prometheus-scrape-token"


@pytest.fixture(autouse=True)
def metrics_token(settings):
    """Scraped as Prometheus is in production: with the token (and so every label)."""
    settings.METRICS_TOKEN = TOKEN


def scrape(client, path="/metrics/prometheus") -> dict:
    response = client.get(path, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    return {f.name: f for f in text_string_to_metric_families(response.content.decode())}


def samples(family, sample_name=None) -> dict:
    """{label values (sorted items) or (): value} of one family's samples."""
    return {
        tuple(sorted(s.labels.items())): s.value
        for s in family.samples
        if sample_name is None or s.name == sample_name
    }


def test_requests_are_counted_by_path_model_and_status_for_all_time(
    client, default_config, decisions
):
    family = scrape(client)["router_requests"]

    assert family.type == "counter"
    assert samples(family, "router_requests_total") == {
        (("model", "gpt-4.1"), ("path", "routed"), ("status", "200")): 3.0,
        (("model", "gpt-4.1"), ("path", "routed"), ("status", "unknown")): 1.0,
        (("model", "gpt-4.1-mini"), ("path", "passthrough"), ("status", "502")): 1.0,
    }


def test_tokens_saved_and_relevance_fallbacks_are_all_time_counters(
    client, default_config, decisions
):
    families = scrape(client)

    assert samples(families["router_pinch_tokens_saved"]) == {(): 5800.0}
    assert samples(families["router_pinch_relevance_fallbacks"]) == {(): 2.0}


def test_upstream_latency_is_a_histogram_in_seconds(client, default_config, decisions):
    family = scrape(client)["router_upstream_latency_seconds"]

    assert family.type == "histogram"
    buckets = {s.labels["le"]: s.value for s in family.samples if s.name.endswith("_bucket")}
    # latencies 0.2 s, 0.8 s, 3 s and 100 s; one row has none
    assert buckets == {
        "0.25": 1.0,
        "0.5": 1.0,
        "1.0": 2.0,
        "2.5": 2.0,
        "5.0": 3.0,
        "10.0": 3.0,
        "30.0": 3.0,
        "60.0": 3.0,
        "120.0": 4.0,
        "300.0": 4.0,
        "+Inf": 4.0,
    }
    assert samples(family, "router_upstream_latency_seconds_count") == {(): 4.0}
    assert samples(family, "router_upstream_latency_seconds_sum") == {(): 104.0}


def test_window_gauges_match_pinch_summary(client, default_config, decisions):
    families = scrape(client)
    summary = pinch_summary(default_config)

    # 600 tokens on gpt-4.1 at $2.00/1M; the 200 the 502 would have saved on gpt-4.1-mini
    # were never billed, so they saved nothing.
    assert summary["dollars_saved_usd_30d"] == 0.0012
    assert samples(families["router_pinch_dollars_saved_usd_30d"]) == {(): 0.0012}
    # Of the two answered calls one was pruned; the 502 and the unanswered one are apart.
    assert samples(families["router_pinch_share_pruned_30d"]) == {(): 0.5}
    assert samples(families["router_pinch_failed_calls_30d"]) == {(): 2.0}
    assert samples(families["router_pinch_enabled"]) == {(): 1.0}


def test_tool_results_compressed_are_added_up_by_tool_over_the_window(
    client, default_config, decisions
):
    family = scrape(client)["router_pinch_tool_results_compressed_30d"]

    assert samples(family) == {(("tool", "bash"),): 1.0, (("tool", "read_file"),): 5.0}


def test_odd_pinch_tools_values_are_skipped(client, default_config, db):
    seed(
        decision(saved=10, pinch_tools={"bash": 2, "weird": "3", "flag": True}),
        decision(saved=10, pinch_tools=["bash"]),
    )

    family = scrape(client)["router_pinch_tool_results_compressed_30d"]

    assert samples(family) == {(("tool", "bash"),): 2.0}


def test_window_families_are_left_out_when_pinch_is_disabled(client, default_config, decisions):
    ConfigOverride.objects.create(key="pinch.enabled", value=False)

    families = scrape(client)

    assert samples(families["router_pinch_enabled"]) == {(): 0.0}
    assert "router_pinch_dollars_saved_usd_30d" not in families
    assert "router_pinch_share_pruned_30d" not in families
    assert "router_pinch_tool_results_compressed_30d" not in families
    # History stays: counters never go back.
    assert samples(families["router_pinch_tokens_saved"]) == {(): 5800.0}


def test_an_empty_database_gives_zeroes(client, default_config, db):
    families = scrape(client)

    assert samples(families["router_requests"]) == {}
    assert samples(families["router_pinch_tokens_saved"]) == {(): 0.0}
    assert samples(
        families["router_upstream_latency_seconds"], "router_upstream_latency_seconds_count"
    ) == {(): 0.0}
    assert samples(families["router_pinch_share_pruned_30d"]) == {(): 0.0}


def test_openmetrics_output_parses_too(client, default_config, decisions):
    response = client.get(
        "/metrics",
        HTTP_ACCEPT="application/openmetrics-text; version=1.0.0",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )

    text = response.content.decode()
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in openmetrics_families(text)}
    assert samples(families["router_pinch_tokens_saved"], "router_pinch_tokens_saved_total") == {
        (): 5800.0
    }
