"""Predicted against billed on every surface: /metrics, Prometheus, the dashboard, pinch_summary.

Rows are seeded with the verdicts routing.cache_forecast gives (its own
tests drive real requests); here the window's counts must agree everywhere.
"""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from metrics.cache_forecast import cache_forecast
from metrics.summary import summary_window
from tests.metrics.test_prometheus import samples, scrape
from tests.support.decisions import decision, seed


def compared(surprise="", conversation="c1", reason="", read=900, billed_read=900, **fields):
    return decision(
        conversation=conversation,
        predicted_cache_read_tokens=read,
        predicted_cache_write_tokens=100,
        predicted_uncached_tokens=0,
        cache_read_tokens=billed_read,
        cache_write_tokens=1000 - billed_read,
        prompt_tokens=1000,
        cache_surprise=surprise,
        cache_miss_reason=reason,
        **fields,
    )


@pytest.fixture
def forecast_rows(db):
    return seed(
        compared(),
        compared(surprise="miss", billed_read=0, reason="tools_changed"),
        compared(surprise="miss", conversation="c2", billed_read=0),
        compared(surprise="hit", conversation="c3", read=0),
        compared(surprise="miss", billed_read=0, age=timedelta(days=40)),  # outside the window
        decision(saved=10),  # no prediction: not compared
    )


def test_the_window_counts_misses_hits_conversations_and_reasons(default_config, forecast_rows):
    figures = cache_forecast(summary_window(default_config))
    assert figures["forecast_calls_30d"] == 4
    assert figures["cache_misses_30d"] == 2
    assert figures["cache_unexpected_hits_30d"] == 1
    assert figures["conversations_surprised_30d"] == 3
    assert figures["cache_miss_reasons_30d"] == {"tools_changed": 1}
    assert figures["predicted_read_share_30d"] == pytest.approx(2700 / 3100, abs=1e-4)
    assert figures["billed_read_share_30d"] == pytest.approx(1800 / 4000, abs=1e-4)


def test_metrics_json_and_prometheus_show_the_same_counts(client, default_config, forecast_rows):
    figures = cache_forecast(summary_window(default_config))
    assert client.get("/metrics").json()["cache_forecast"] == figures
    families = scrape(client)
    assert samples(families["router_pinch_cache_surprises_30d"]) == {
        (("kind", "miss"),): 2,
        (("kind", "hit"),): 1,
    }
    assert samples(families["router_pinch_conversations_surprised_30d"]) == {(): 3}
    assert samples(families["router_pinch_cache_miss_reasons_30d"]) == {
        (("reason", "tools_changed"),): 1
    }


def test_the_dashboard_shows_them(client, staff_user, default_config, forecast_rows):
    client.force_login(staff_user)
    body = client.get("/dashboard/").content.decode()
    assert 'data-testid="cache-misses" data-value="2"' in body
    assert 'data-testid="cache-unexpected-hits" data-value="1"' in body
    assert 'data-testid="cache-conversations-surprised" data-value="3"' in body
    assert "tools_changed 1" in body


def test_pinch_summary_prints_them(default_config, forecast_rows):
    out = StringIO()
    call_command("pinch_summary", stdout=out)
    assert "2 missed (predicted warm, billed as written), 1 unexpected hits, in 3" in out.getvalue()
    assert "provider's reasons: tools_changed 1" in out.getvalue()


def test_pinch_summary_json_carries_the_same_figures_as_metrics(
    client, default_config, forecast_rows
):
    out = StringIO()
    call_command("pinch_summary", "--json", stdout=out)
    assert (
        json.loads(out.getvalue())["cache_forecast"]
        == client.get("/metrics").json()["cache_forecast"]
    )
