"""Savings by cause: routing, pinch net of the cache, the cache; with the bill they add up.

The rows are priced by hand at the shipped prices (gpt-4.1: $2 / $0.50 cached
/ $8 completion per 1M; gpt-4.1-mini: $0.40 / $0.10 / $1.60):

* routed to gpt-4.1-mini against gpt-4.1: 10,000 prompt tokens billed (pinch
  removed 2,000), 1,000 completion; billed prompt $0.0022, unpruned with the
  cache $0.0030. Without router or cache: 12,000 x $2 + 1,000 x $8 = $0.032;
  on mini uncached $0.0064; with the cache $0.0046; billed $0.0038.
  Routing $0.0256, cache $0.0018, pinch $0.0008.
* pinned to gpt-4.1, sent whole and uncached: 1,000 + 100 tokens, $0.0028, saves nothing.
* an estimated-usage row: no bill, left out.
"""

import asyncio
import json
from io import StringIO

import pytest
from django.core.management import call_command
from prometheus_client.parser import text_string_to_metric_families
from textual.widgets import DataTable

from metrics.savings import savings_by_cause
from metrics.summary import pinch_summary
from metrics.tui import RouterTui
from routing.auth import create_api_key
from routing.formatting import format_money
from routing.models import RouteDecision
from tests.support.decisions import decision, seed

EXPECTED = {
    "routing_usd_30d": 0.0256,
    "pinch_usd_30d": 0.0008,
    "cache_usd_30d": 0.0018,
    "bill_usd_30d": 0.0066,
    "baseline_usd_30d": 0.0348,
}


@pytest.fixture
def billed_rows(db):
    return seed(
        decision(
            chosen_model="gpt-4.1-mini",
            baseline_model="gpt-4.1",
            conversation="c1",
            pinch_original_tokens=12_000,
            pinch_final_tokens=10_000,
            prompt_tokens=10_000,
            completion_tokens=1_000,
            cache_read_tokens=6_000,
            billed_prompt_cost_usd=0.0022,
            unpruned_cost_usd=0.0030,
        ),
        decision(
            path=RouteDecision.PATH_PASSTHROUGH,
            baseline_model="gpt-4.1",
            conversation="c2",
            saved=0,
            prompt_tokens=1_000,
            completion_tokens=100,
            billed_prompt_cost_usd=0.002,
            unpruned_cost_usd=0.002,
        ),
        decision(saved=500, prompt_tokens=900, completion_tokens=10, usage_estimated=True),
    )


def adds_up(figures: dict) -> None:
    parts = ("bill_usd_30d", "routing_usd_30d", "pinch_usd_30d", "cache_usd_30d")
    assert sum(figures[k] for k in parts) == pytest.approx(figures["baseline_usd_30d"], abs=1e-9)


def test_each_cause_is_priced_one_step_from_the_next(default_config, billed_rows):
    figures = savings_by_cause(default_config)
    assert {k: figures[k] for k in EXPECTED} == pytest.approx(EXPECTED, abs=1e-9)
    assert figures["billed_calls_30d"] == 2
    adds_up(figures)
    # Pinch's share is the net saving pinch_summary reports, from the same rows.
    assert figures["pinch_usd_30d"] == pinch_summary(default_config)["net_dollars_saved_usd_30d"]


def test_the_causes_add_up_to_the_bill_on_metrics_json_and_prometheus(
    client, default_config, billed_rows
):
    shown = client.get("/metrics").json()["savings_by_cause"]
    assert shown == savings_by_cause(default_config)
    adds_up(shown)

    text = client.get("/metrics/prometheus").content.decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    causes = {s.labels["cause"]: s.value for s in families["router_savings_usd_30d"].samples}
    bill = families["router_bill_usd_30d"].samples[0].value
    assert causes == pytest.approx({"routing": 0.0256, "pinch": 0.0008, "cache": 0.0018})
    assert sum(causes.values()) + bill == pytest.approx(EXPECTED["baseline_usd_30d"])


def test_the_causes_add_up_on_the_dashboard_and_the_command(
    client, staff_user, default_config, billed_rows
):
    client.force_login(staff_user)
    page = client.get("/dashboard/")
    context = page.context["savings_by_cause"]
    adds_up(context)
    html = page.content.decode()
    for key, value in EXPECTED.items():
        assert f'data-testid="cause-{key}" data-value="{value}"' in html
    assert ">$0.026<" in html  # money for people: two significant digits

    out = StringIO()
    call_command("pinch_summary", "--json", stdout=out)
    adds_up(json.loads(out.getvalue())["savings_by_cause"])
    out = StringIO()
    call_command("pinch_summary", stdout=out)
    text = out.getvalue()
    assert "routing                          $0.026" in text
    assert "without the router or the cache  $0.035" in text


@pytest.mark.django_db(transaction=True)
def test_the_causes_add_up_in_the_tui(live_server, default_config, billed_rows):
    _, token = create_api_key("tui", is_staff=True)
    app = RouterTui(live_server.url, token, interval=60)
    shown = {}

    async def scenario():
        async with app.run_test(size=(150, 45)) as pilot:
            while app.fetches < 1:
                await pilot.pause(0.05)
            table = app.query_one("#causes", DataTable)
            for row in table.ordered_rows:
                shown[str(row.key.value)] = table.get_row(row.key)[1]

    asyncio.run(scenario())
    # As every surface reads money (routing.formatting); the figures
    # themselves add up (the tests above).
    assert shown == {key: format_money(value) for key, value in EXPECTED.items()}


def test_a_model_no_longer_configured_adds_its_pinch_saving_to_both_surfaces_alike(
    default_config, db
):
    seed(
        decision(
            saved=2_000,
            chosen_model="retired-model",
            prompt_tokens=1_000,
            completion_tokens=100,
            billed_prompt_cost_usd=0.001,
            unpruned_cost_usd=0.003,
        )
    )

    figures = savings_by_cause(default_config)

    # Its bill and the other causes cannot be priced without the model; pinch's net was
    # priced when the row was written, and the card shows the same figure.
    assert figures["unpriced_calls_30d"] == 1
    assert figures["bill_usd_30d"] == figures["routing_usd_30d"] == figures["cache_usd_30d"] == 0
    assert figures["pinch_usd_30d"] == 0.002
    assert pinch_summary(default_config)["net_dollars_saved_usd_30d"] == 0.002
    adds_up(figures)
