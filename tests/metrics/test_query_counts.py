"""The metrics pages cost a fixed number of queries, whatever the table's size.

Config reads are two of them (``current_config``: overrides, registered models).
"""

from datetime import timedelta

import pytest

from metrics.summary import pinch_summary
from routing.models import RouteDecision
from tests.support.decisions import decision, seed

MODELS = ("gpt-4.1", "gpt-4.1-mini", "qwen-small", "retired-model")


def seed_varied(count):
    """Rows spread over models, paths, statuses, savings, tools, latencies and days."""
    seed(
        *(
            decision(
                age=timedelta(hours=i * 5),
                chosen_model=MODELS[i % len(MODELS)],
                path=RouteDecision.PATH_PASSTHROUGH if i % 3 else RouteDecision.PATH_ROUTED,
                status_code=(200, 502, None)[i % 3],
                saved=None if i % 7 == 0 else i * 13,
                pinch_tools={f"tool_{i % 5}": i % 4 + 1},
                relevance_fallback=i % 11 == 0,
                upstream_latency_ms=None if i % 5 == 0 else i * 97.5,
            )
            for i in range(count)
        )
    )


ROW_COUNTS = pytest.mark.parametrize("rows", [10, 200])


@ROW_COUNTS
def test_pinch_summary_is_three_queries(default_config, db, django_assert_num_queries, rows):
    seed_varied(rows)

    # the window's summaries by model, the median's histogram, the conversations' net
    with django_assert_num_queries(3):
        pinch_summary(default_config)


@ROW_COUNTS
def test_metrics_json(client, default_config, db, django_assert_num_queries, rows):
    seed_varied(rows)

    # config (2) + pinch summary (3) + cache forecast (2) + quality (3) + request totals
    # + savings by cause (2: its causes, pinch's net)
    with django_assert_num_queries(13):
        assert client.get("/metrics").status_code == 200


@ROW_COUNTS
@pytest.mark.parametrize(
    "path, accept",
    [("/metrics/prometheus", ""), ("/metrics", "text/plain")],
    ids=["/metrics/prometheus", "/metrics as text/plain"],
)
def test_prometheus(
    client, settings, default_config, db, django_assert_num_queries, rows, path, accept
):
    seed_varied(rows)
    settings.METRICS_TOKEN = "scrape"  # every family, the tool-name one included

    # config (2) + requests + all-time aggregate + pinch summary (3) + pinch tools + limited keys
    # + quality (3) + cache forecast (2) + savings by cause (2: its causes, pinch's net)
    with django_assert_num_queries(16):
        response = client.get(path, HTTP_ACCEPT=accept, HTTP_AUTHORIZATION="Bearer scrape")
        assert response.status_code == 200


@ROW_COUNTS
def test_snapshot_with_a_staff_key(
    client, default_config, staff_key, django_assert_num_queries, rows
):
    seed_varied(rows)

    # key + config (2) + pinch summary (3) + overrides + recent decisions + savings (2)
    # + limited keys
    with django_assert_num_queries(11):
        response = client.get("/admin/api/snapshot", HTTP_AUTHORIZATION=f"Bearer {staff_key}")
    assert response.status_code == 200
    assert len(response.json()["recent_decisions"]) == min(rows, 50)


@ROW_COUNTS
def test_snapshot_with_a_staff_session(
    client, default_config, staff_user, django_assert_num_queries, rows
):
    seed_varied(rows)
    client.force_login(staff_user)

    # session + user + its permissions (2: the user's, its groups') + config (2)
    # + pinch summary (3) + overrides + recent decisions + limited keys + savings by cause (2)
    with django_assert_num_queries(14):
        assert client.get("/admin/api/snapshot").status_code == 200
