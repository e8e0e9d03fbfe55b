"""/dashboard/: the Pinch savings card, the per-day chart and the recent decisions."""

import re
from datetime import timedelta

import pytest

from metrics.summary import pinch_summary
from routing.formatting import format_money
from routing.models import ConfigOverride
from tests.support.decisions import decision, seed

DASHBOARD = "/dashboard/"


@pytest.fixture
def staff_client(client, staff_user):
    client.force_login(staff_user)
    return client


def figure(body: str, testid: str) -> str:
    match = re.search(rf'data-testid="{testid}"[^>]*>([^<]*)<', body)
    assert match, f"no element with data-testid={testid!r}"
    return match.group(1).strip()


def test_the_card_shows_the_pinch_figures_formatted(staff_client, default_config, savings_rows):
    response = staff_client.get(DASHBOARD)

    assert response.status_code == 200
    body = response.content.decode()
    assert figure(body, "pinch-share-pruned") == "80.00%"
    assert figure(body, "pinch-tokens-saved") == "6,050"
    assert figure(body, "pinch-median-saved") == "750"
    assert figure(body, "pinch-dollars-saved") == "$0.0043"
    assert figure(body, "pinch-pruned-calls") == "4"
    assert figure(body, "pinch-calls") == "5"
    assert figure(body, "pinch-failed-calls") == "1"
    assert "1 call(s) to unconfigured models priced at $0" in body


def test_the_card_figures_are_pinch_summarys(staff_client, default_config, savings_rows):
    summary = pinch_summary(default_config)

    body = staff_client.get(DASHBOARD).content.decode()

    assert figure(body, "pinch-share-pruned") == f"{summary['share_pruned'] * 100:.2f}%"
    assert figure(body, "pinch-tokens-saved") == f"{summary['total_tokens_saved']:,}"
    assert figure(body, "pinch-dollars-saved") == format_money(summary["dollars_saved_usd_30d"])
    assert f'data-value="{summary["median_tokens_saved"]}"' in body


def a_conversation_pinch_made_dearer():
    """Two conversations: one saved $0.0015 net, the other lost $0.0042 (net -$0.0027)."""
    return seed(
        decision(
            saved=1000, conversation="a", unpruned_cost_usd=0.004, billed_prompt_cost_usd=0.0025
        ),
        decision(
            saved=500, conversation="b", unpruned_cost_usd=0.001, billed_prompt_cost_usd=0.0052
        ),
    )


def test_a_net_loss_is_the_headline_in_red_with_the_sign_before_the_dollar(
    staff_client, default_config
):
    a_conversation_pinch_made_dearer()

    body = staff_client.get(DASHBOARD).content.decode()

    headline = re.search(r'<div class="figure net (\w+)" data-testid="pinch-headline"', body)
    assert headline and headline.group(1) == "loss"
    assert "Net loss with pinch, after the prompt cache" in body
    assert figure(body, "pinch-net-dollars-saved") == "-$0.0027"
    assert figure(body, "pinch-conversations-dearer") == "1"
    assert 'class="loss" id="pinch-conversations-dearer"' in body
    # The net figure comes before the gross one, which is positive and not the headline.
    assert body.index('data-testid="pinch-net-dollars-saved"') < body.index(
        'data-testid="pinch-dollars-saved"'
    )
    assert "$-" not in body


def test_the_chart_legend_prints_the_cards_net_figure(staff_client, default_config):
    a_conversation_pinch_made_dearer()

    body = staff_client.get(DASHBOARD).content.decode()

    assert figure(body, "chart-net-total") == figure(body, "pinch-net-dollars-saved")


def test_a_net_saving_is_the_headline_in_green(staff_client, default_config):
    seed(decision(saved=1000, conversation="a", unpruned_cost_usd=0.5, billed_prompt_cost_usd=0.1))

    body = staff_client.get(DASHBOARD).content.decode()

    assert 'data-testid="pinch-headline" data-tone="gain"' in body
    assert "Net saved with pinch" in body
    assert figure(body, "pinch-net-dollars-saved") == "$0.40"


def test_a_fractional_median_keeps_one_decimal(staff_client, default_config):
    seed(decision(saved=101), decision(saved=102))

    body = staff_client.get(DASHBOARD).content.decode()

    assert figure(body, "pinch-median-saved") == "101.5"


def test_it_says_pinch_is_disabled_when_pinch_summary_is_none(
    staff_client, default_config, savings_rows
):
    ConfigOverride.objects.create(key="pinch.enabled", value=False)

    response = staff_client.get(DASHBOARD)

    assert response.status_code == 200
    body = response.content.decode()
    assert figure(body, "pinch-disabled") == "Pinch is disabled"
    assert 'data-testid="pinch-share-pruned"' not in body


def test_an_empty_database_shows_zeros_and_an_empty_chart(staff_client, default_config):
    body = staff_client.get(DASHBOARD).content.decode()

    assert figure(body, "pinch-share-pruned") == "0.00%"
    assert figure(body, "pinch-dollars-saved") == "$0"
    assert 'data-testid="chart-empty"' in body
    assert 'data-testid="no-decisions"' in body


def test_the_chart_has_a_bar_per_day_and_a_dollar_line(staff_client, default_config, savings_rows):
    response = staff_client.get(DASHBOARD)

    body = response.content.decode()
    bars = re.findall(r'<rect class="bar" data-day="([\d-]+)" data-tokens="(\d+)"', body)
    # The oldest saving in the window is 5 days old: a week of days, ending today.
    assert len(bars) == 7
    assert sum(int(tokens) for _, tokens in bars) == 6050
    assert "<polyline points=" in body
    assert "tokens saved</text>" in body and "USD saved</text>" in body


def test_the_table_lists_the_newest_fifty_decisions(staff_client, default_config):
    seed(*(decision(age=timedelta(minutes=i), saved=i, tier=f"t{i}") for i in range(60)))

    body = staff_client.get(DASHBOARD).content.decode()

    rows = re.findall(r'<tr data-decision-id="(\d+)">', body)
    assert len(rows) == 50
    tiers = re.findall(r"<td>routed · (t\d+)</td>", body)
    assert tiers[:3] == ["t0", "t1", "t2"] and "t50" not in tiers


@pytest.mark.parametrize("is_staff", [False, None])
def test_it_is_for_logged_in_staff_only(client, django_user_model, default_config, is_staff):
    if is_staff is not None:
        client.force_login(django_user_model.objects.create_user("agent", password="x" * 12))

    response = client.get(DASHBOARD)

    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=/dashboard/"


def test_a_broken_config_is_explained_not_a_500(staff_client, write_default_config, settings):
    write_default_config()
    ConfigOverride.objects.create(key="pinch.budget_tokens", value=-5)

    response = staff_client.get(DASHBOARD)

    assert response.status_code == 503
    assert "pinch.budget_tokens: Input should be greater than 0" in response.content.decode()


def test_staff_without_the_view_permission_sees_no_decisions(
    client, default_config, bare_staff_user
):
    seed(decision(saved=400, requested_model="tenant-secret-model"))
    client.force_login(bare_staff_user)

    body = client.get(DASHBOARD).content.decode()

    assert 'data-testid="decisions-hidden"' in body
    assert "tenant-secret-model" not in body
