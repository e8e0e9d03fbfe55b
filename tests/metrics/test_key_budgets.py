"""Spend against budget per key, on the dashboard, in the TUI and in /metrics: one set of figures.

The spend shown is the one a request is checked against (routing.limits.budgets):
billed prompt cost net of the cache, the estimate until usage arrives, plus
completion tokens at the model's price.
"""

import asyncio
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families
from textual.widgets import DataTable

from metrics.tui import RouterTui
from routing.auth import create_api_key
from routing.models import LimitRefusal
from tests.support.decisions import decision, seed

DASHBOARD = "/dashboard/"


@pytest.fixture
def limited(db, default_config):
    """Team A spent $4.50 of its $5 daily budget (past its $4 soft one); team B has only an rpm."""
    team_a, _ = create_api_key(
        "team-a", limits={"budget_usd": 5.0, "soft_budget_usd": 4.0, "budget_period": "day"}
    )
    team_b, _ = create_api_key("team-b", limits={"rpm_limit": 60})
    create_api_key("unlimited")
    seed(
        decision(api_key=team_a, chosen_model="gpt-4.1", estimated_cost_usd=3.0),
        decision(api_key=team_a, chosen_model="gpt-4.1", billed_prompt_cost_usd=1.5),
        decision(api_key=team_b, chosen_model="gpt-4.1", estimated_cost_usd=9.0),
    )
    LimitRefusal.objects.create(api_key=team_b, reason="rpm", count=7)
    return team_a, team_b


def test_the_dashboard_shows_each_limited_keys_spend_against_its_budget(
    client, staff_user, limited
):
    client.force_login(staff_user)
    page = client.get(DASHBOARD).content.decode()
    assert 'data-testid="key-budgets"' in page
    section = page[page.index('id="key-budgets"') :]
    assert "team-a" in section and "team-b" in section and "unlimited" not in section
    row_a = section[section.index('data-key="team-a"') : section.index('data-key="team-b"')]
    assert "$4.50 this day" in row_a and "$5.00" in row_a and "90%" in row_a
    assert "past soft budget" in row_a
    row_b = section[section.index('data-key="team-b"') :]
    assert "no budget" in row_b and "60 rpm" in row_b and "7 rpm" in row_b


def test_the_dashboard_has_no_budget_section_without_limited_keys(
    client, staff_user, default_config
):
    create_api_key("unlimited")
    client.force_login(staff_user)
    assert 'id="key-budgets"' not in client.get(DASHBOARD).content.decode()


def test_public_metrics_name_no_key(client, limited):
    text = client.get("/metrics/prometheus").content.decode()
    assert "router_key_spend_usd" not in text
    assert "team-a" not in text


def test_prometheus_has_spend_and_budget_gauges_and_refusals_by_reason(client, settings, limited):
    settings.METRICS_TOKEN = "scrape"  # key names are tenant data: behind the token
    text = client.get("/metrics/prometheus", HTTP_AUTHORIZATION="Bearer scrape").content.decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    spend = {
        tuple(sorted(s.labels.items())): s.value for s in families["router_key_spend_usd"].samples
    }
    assert spend[(("key", "team-a"), ("period", "day"))] == pytest.approx(4.5)
    budget = {
        (s.labels["key"], s.labels["kind"]): s.value
        for s in families["router_key_budget_usd"].samples
    }
    assert budget == {("team-a", "hard"): 5.0, ("team-a", "soft"): 4.0}
    refused = {
        (s.labels["key"], s.labels["reason"]): s.value
        for s in families["router_limit_refusals"].samples
        if s.name == "router_limit_refusals_total"
    }
    assert refused[("team-b", "rpm")] == 7
    assert refused[("team-a", "budget")] == 0


@pytest.mark.django_db(transaction=True)
def test_the_tui_shows_spend_against_budget_per_key(live_server, limited):
    _, token = create_api_key("tui", is_staff=True)
    app = RouterTui(live_server.url, token, interval=60)

    async def scenario():
        async with app.run_test(size=(150, 45)) as pilot:
            deadline = time.monotonic() + 15
            while app.fetches < 1 and time.monotonic() < deadline:
                await pilot.pause(0.05)
            table = app.query_one("#keys", DataTable)
            return [table.get_row(row.key) for row in table.ordered_rows]

    rows = asyncio.run(scenario())
    assert [row[0] for row in rows] == ["team-a", "team-b"]
    assert rows[0][1:5] == ["$4.50 this day", "$5.00", "$4.00", "90%"]
    assert rows[0][5] == "past soft budget"
    assert rows[1][-1] == "7 rpm"
