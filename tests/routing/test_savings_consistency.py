"""Rows made by real requests: every surface shows the same savings."""

import io
import json
import re

import openai
import pytest
from django.core.management import call_command

from metrics.summary import pinch_summary
from router_project.snapshot import build_snapshot
from routing.auth import create_api_key
from routing.config.store import current_config

pytestmark = pytest.mark.django_db(transaction=True)


def test_card_metrics_snapshot_and_command_agree_after_real_requests(
    live_server, api_key, router_config, write_config, corpus_dir, client, django_user_model
):
    router_config["pinch"]["budget_tokens"] = 20000
    router_config["objective"]["assumed_cache_rate"] = 0.5
    write_config(router_config)
    sdk = openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)
    messages = json.loads((corpus_dir / "013.json").read_text())["messages"]
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    for t in turns[-3:]:
        sdk.chat.completions.create(model="echo-hard", messages=messages[:t])
    sdk.chat.completions.create(model="auto", messages=[{"role": "user", "content": "hi"}])

    summary = pinch_summary(current_config())
    assert summary["calls_30d"] == 4
    assert summary["pruned_calls_30d"] == 3
    assert summary["dollars_saved_usd_30d"] > 0

    out = io.StringIO()
    call_command("pinch_summary", "--json", stdout=out)
    printed = json.loads(out.getvalue())
    assert "arms" in printed.pop("quality")  # what it cost the agent: tests/routing/test_quality_*
    assert "routing_usd_30d" in printed.pop("savings_by_cause")  # tests/metrics/test_savings_*
    assert "cache_misses_30d" in printed.pop("cache_forecast")  # tests/metrics/test_cache_forecast
    assert printed == summary

    metrics = client.get("/metrics").json()
    assert metrics["pinch"] == summary

    _, staff_raw = create_api_key("ops", is_staff=True)
    snapshot = client.get("/admin/api/snapshot", HTTP_AUTHORIZATION=f"Bearer {staff_raw}").json()
    assert snapshot["pinch"] == summary
    assert snapshot["pinch"] == build_snapshot(current_config())["pinch"]

    staff = django_user_model.objects.create_user("ops", password="x" * 12, is_staff=True)
    client.force_login(staff)
    page = client.get("/dashboard/").content.decode()

    def card(testid):
        return re.search(rf'data-testid="{testid}" data-value="([^"]+)"', page).group(1)

    assert float(card("pinch-share-pruned")) == summary["share_pruned"]
    assert int(card("pinch-tokens-saved")) == summary["total_tokens_saved"]
    assert float(card("pinch-median-saved")) == summary["median_tokens_saved"]
    assert float(card("pinch-dollars-saved")) == summary["dollars_saved_usd_30d"]
