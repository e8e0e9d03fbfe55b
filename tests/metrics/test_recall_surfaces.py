"""Recall as a quality signal on every surface: the quality block's ``recall``
(metrics/recall_quality.py, from the summary tables), shown by pinch_summary (text and
--json), /metrics (JSON and Prometheus) and the dashboard's quality card."""

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from prometheus_client.parser import text_string_to_metric_families

from metrics.quality import quality_summary
from tests.support.decisions import decision, seed

pytestmark = pytest.mark.django_db


@pytest.fixture
def recalled(db):
    """Two conversations pinch pruned (three answered pruned requests, 2 recalls in one of
    them, 1 in the other) and a holdout conversation that came back to 1 result of 4 seen."""
    return seed(
        decision(arm="control", conversation="c1", saved=900, recalls=2, recalled_tokens=1200),
        decision(arm="control", conversation="c1", saved=300, recalls=0, recalled_tokens=0),
        decision(
            arm="control",
            conversation="c2",
            saved=500,
            recalls=1,
            recalled_tokens=300,
            quality_seen_compressed=6,
        ),
        # Failed: neither a pruned request nor a pruned conversation of its own.
        decision(arm="control", conversation="c3", saved=700, status_code=502),
        decision(arm="holdout", conversation="h1", quality_seen_whole=4, quality_repeats_whole=1),
    )


def test_the_quality_block_counts_recalls_per_pruned_request_and_conversation(
    default_config, recalled
):
    recall = quality_summary(default_config)["recall"]

    assert recall["recalls"] == 3
    assert recall["recalled_tokens"] == 1500
    assert recall["recalls_per_pruned_request"] == 1.0  # 3 recalls, 3 answered pruned
    assert recall["recalls_per_conversation"] == 1.5  # c1 and c2
    assert recall["recall_rate"]["value"] == 0.5  # 3 per 6 compressed results seen
    assert recall["holdout_repeat_rate"]["value"] == 0.25  # the holdout's 1 of 4


def test_metrics_json_shows_the_recall_block(client, default_config, recalled):
    body = client.get("/metrics").json()

    assert body["quality"]["recall"] == quality_summary(default_config)["recall"]
    assert body["quality"]["recall"]["recalls"] == 3


def test_prometheus_exports_the_recall_series(client, settings, default_config, recalled):
    settings.METRICS_TOKEN = "scrape"
    text = client.get("/metrics/prometheus", HTTP_AUTHORIZATION="Bearer scrape").content.decode()

    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["router_recall_recalls_30d"].samples[0].value == 3
    assert families["router_recall_recalled_tokens_30d"].samples[0].value == 1500
    per = {s.labels["per"]: s.value for s in families["router_recall_recalls_per_30d"].samples}
    assert per == {"pruned_request": 1.0, "conversation": 1.5}
    rates = {
        (s.labels["of"], s.labels["bound"]): s.value
        for s in families["router_recall_rate_30d"].samples
    }
    assert rates[("recalls", "value")] == 0.5
    assert rates[("holdout_repeats", "value")] == 0.25


def test_pinch_summary_prints_and_writes_the_recall_block(default_config, recalled):
    text, as_json = StringIO(), StringIO()
    call_command("pinch_summary", stdout=text)
    call_command("pinch_summary", "--json", stdout=as_json)

    assert "recalls                     3 (1,500 tokens recalled)" in text.getvalue()
    assert "per pruned request          1.000" in text.getvalue()
    assert "per conversation pruned     1.500" in text.getvalue()
    assert json.loads(as_json.getvalue())["quality"]["recall"]["recalls"] == 3


def test_the_dashboards_quality_card_shows_the_recalls(
    client, staff_user, default_config, recalled
):
    client.force_login(staff_user)
    body = client.get("/dashboard/").content.decode()

    shown = re.search(r'data-testid="quality-recalls"[^>]*>([^<]*)<', body).group(1)
    assert shown.strip() == "3 (1,500 tokens recalled)"
    rate = re.search(r'data-testid="quality-recall-rate"[^>]*>([^<]*)<', body).group(1)
    assert rate.startswith("50.00%")
