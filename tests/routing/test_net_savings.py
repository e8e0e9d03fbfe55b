"""Savings net of the prompt cache, from what the provider billed, on every surface.

Real requests (the official SDK, real sockets) go through the router to a test
upstream that reports cached prompt tokens the way OpenAI's automatic cache
does (``cache-*`` in tests/support/openai_upstream.py). Each decision row then
carries the cache figures; the summary nets them; the command, /metrics (JSON
and Prometheus), the snapshot, the dashboard card and the TUI show the same.
"""

import asyncio
import io
import json
import re

import openai
import pytest
from django.core.management import call_command

from metrics.dashboard import daily_savings
from metrics.summary import pinch_summary, summary_window
from metrics.tui import RouterTui
from routing.auth import create_api_key
from routing.config.store import current_config
from routing.formatting import CARD_KEYS, pinch_card
from routing.models import RouteDecision
from tests.metrics.test_tui_app import SCREEN, shown_pinch_rows, until

pytestmark = pytest.mark.django_db(transaction=True)

PRICE = 10.0  # USD per 1M prompt tokens
CACHE = {"ttl": "5m", "min_tokens": 1024}  # writes 1.25x; reads at the cached price, 0.1x


@pytest.fixture
def cached_model_config(router_config, write_config):
    router_config["models"].append(
        {
            "id": "cache-hard",
            "provider": "up",
            "tier": "hard",
            "context_window": 400000,
            "prompt_price": PRICE,
            "cached_prompt_price": PRICE * 0.1,
            "completion_price": PRICE * 4,
            "capabilities": ["tools"],
            "cache": CACHE,
        }
    )
    router_config["pinch"]["payback"] = {"enabled": True}
    router_config["pinch"]["budget_tokens"] = 8000
    write_config(router_config)
    return router_config


def send_session_tail(sdk, corpus_dir, name, requests):
    messages = json.loads((corpus_dir / name).read_text())["messages"]
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    for t in turns[-requests:]:
        sdk.chat.completions.create(model="cache-hard", messages=messages[:t])


def test_each_decision_records_what_the_provider_billed_and_the_unpruned_estimate(
    live_server, api_key, cached_model_config, corpus_dir
):
    sdk = openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)
    send_session_tail(sdk, corpus_dir, "013.json", 6)

    rows = list(RouteDecision.objects.order_by("id"))
    assert len(rows) == 6
    assert any(row.pinch_final_tokens < row.pinch_original_tokens for row in rows)
    assert len({row.conversation for row in rows}) == 1 and rows[0].conversation
    for row in rows:
        # The upstream's own usage (reads reported, no writes: an automatic
        # cache), priced by the model's prices.
        assert row.cache_read_tokens is not None and row.prompt_tokens > 0
        uncached = row.prompt_tokens - row.cache_read_tokens
        billed = (PRICE * 0.1 * row.cache_read_tokens + PRICE * uncached) / 1e6
        assert row.billed_prompt_cost_usd == pytest.approx(billed)
        if row.pinch_final_tokens == row.pinch_original_tokens:
            assert row.unpruned_cost_usd == row.billed_prompt_cost_usd
        else:
            # Unpruned, the request would have sent more, mostly read from the cache.
            assert row.unpruned_cost_usd > 0
    # From the second request on the payload repeats the previous one: cache reads.
    assert all(row.cache_read_tokens > 0 for row in rows[1:])


def test_without_reported_usage_no_cost_is_invented(live_server, api_key, router_config):
    sdk = openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)
    sdk.chat.completions.create(model="nousage-model", messages=[{"role": "user", "content": "x"}])
    row = RouteDecision.objects.get()
    assert row.usage_estimated
    assert row.billed_prompt_cost_usd is None and row.unpruned_cost_usd is None
    assert pinch_summary(current_config())["billed_calls_30d"] == 0


def test_card_metrics_snapshot_command_and_tui_agree_on_the_net_figures(
    live_server, api_key, cached_model_config, corpus_dir, client, django_user_model
):
    sdk = openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)
    send_session_tail(sdk, corpus_dir, "013.json", 6)
    sdk.chat.completions.create(model="cache-hard", messages=[{"role": "user", "content": "hi"}])

    summary = pinch_summary(current_config())
    rows = RouteDecision.objects.all()
    net = sum(row.unpruned_cost_usd - row.billed_prompt_cost_usd for row in rows)
    assert summary["net_dollars_saved_usd_30d"] == pytest.approx(net, abs=2e-6)
    assert summary["billed_calls_30d"] == 7
    # One conversation was pruned; "hi" was sent whole and is neither cheaper nor dearer.
    assert summary["conversations_cheaper_30d"] + summary["conversations_dearer_30d"] == 1
    if net > 0:
        assert summary["conversations_cheaper_30d"] == 1
    # The gross figure prices tokens at the blended price: not the same number.
    assert summary["dollars_saved_usd_30d"] != summary["net_dollars_saved_usd_30d"]

    out = io.StringIO()
    call_command("pinch_summary", "--json", stdout=out)
    printed = json.loads(out.getvalue())
    assert "arms" in printed.pop("quality")  # what it cost the agent: tests/routing/test_quality_*
    assert "routing_usd_30d" in printed.pop("savings_by_cause")  # tests/metrics/test_savings_*
    assert "cache_misses_30d" in printed.pop("cache_forecast")  # tests/metrics/test_cache_forecast
    assert printed == summary
    text = io.StringIO()
    call_command("pinch_summary", stdout=text)
    card = pinch_card(summary)
    assert f"net of cache   {card['net_dollars_saved_usd_30d']}" in text.getvalue()

    assert client.get("/metrics").json()["pinch"] == summary
    prometheus = client.get("/metrics", HTTP_ACCEPT="text/plain").content.decode()
    gauge = re.search(r"^router_pinch_net_dollars_saved_usd_30d (\S+)$", prometheus, re.M)
    assert float(gauge.group(1)) == pytest.approx(summary["net_dollars_saved_usd_30d"])
    cheaper = re.search(
        r'^router_pinch_conversations_30d\{effect="cheaper"\} (\S+)$', prometheus, re.M
    )
    assert float(cheaper.group(1)) == summary["conversations_cheaper_30d"]

    _, staff_raw = create_api_key("ops", is_staff=True)
    snapshot = client.get("/admin/api/snapshot", HTTP_AUTHORIZATION=f"Bearer {staff_raw}").json()
    assert snapshot["pinch"] == summary

    staff = django_user_model.objects.create_user("ops", password="x" * 12, is_staff=True)
    client.force_login(staff)
    page = client.get("/dashboard/").content.decode()
    for testid, key in (
        ("pinch-net-dollars-saved", "net_dollars_saved_usd_30d"),
        ("pinch-conversations-cheaper", "conversations_cheaper_30d"),
        ("pinch-conversations-dearer", "conversations_dearer_30d"),
    ):
        found = re.search(rf'data-testid="{testid}" data-value="([^"]+)">([^<]+)<', page)
        assert float(found.group(1)) == summary[key]
        assert found.group(2) == card[key]

    # The chart's legend prints the card's figure, and its net line adds up to it.
    chart_net = re.search(r'data-testid="chart-net-total">([^<]+)<', page).group(1)
    assert chart_net == card["net_dollars_saved_usd_30d"]
    config = current_config()
    points = daily_savings(summary_window(config), config)
    net_line = sum(point.net_dollars for point in points)
    assert net_line == pytest.approx(summary["net_dollars_saved_usd_30d"], abs=2e-6)
    assert 'data-testid="net-line"' in page

    # The TUI, driven for real against the same server, shows the card's figures.
    tui = RouterTui(live_server.url, staff_raw, interval=60)

    async def scenario():
        async with tui.run_test(size=SCREEN) as pilot:
            await until(pilot, lambda: tui.fetches >= 1)
            assert tui.error is None
            assert shown_pinch_rows(tui) == {key: card[key] for key in CARD_KEYS}

    asyncio.run(scenario())
