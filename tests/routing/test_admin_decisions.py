"""Django admin's route-decision log: read-only, with the pinch columns and filters."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from routing.auth import create_api_key
from routing.models import RouteDecision
from tests.support.decisions import decision, seed

CHANGELIST = "/admin/routing/routedecision/"


@pytest.fixture
def staff_client(client, staff_user):
    staff_user.is_superuser = True  # every model permission, so only the admin's own rules apply
    staff_user.save()
    client.force_login(staff_user)
    return client


def shown(response):
    return {row.pk for row in response.context["cl"].result_list}


def test_the_list_shows_tokens_saved_and_the_useful_columns(staff_client, savings_rows):
    response = staff_client.get(CHANGELIST)

    assert response.status_code == 200
    body = response.content.decode()
    heads = re.findall(r'<th scope="col"[^>]*>(.*?)</th>', body, re.S)
    labels = [" ".join(re.sub(r"<[^>]+>", " ", h).split()) for h in heads]
    # What an operator looks for first, in this order; the rest is on a decision's page.
    assert [label for label in labels if label] == [
        "Time (UTC)",
        "Model",
        "Status",
        "Tokens in → out",
        "Tokens saved",
        "Billed prompt",
        "Latency",
        "Key",
    ]
    assert "tokens saved" in body.lower()
    assert ">4,500<" in body  # the 4,500-token saving, computed from original - final
    assert len(shown(response)) == len(savings_rows)


def test_the_list_formats_numbers_money_and_latency(staff_client, db):
    seed(
        decision(
            requested_model="auto",
            chosen_model="gpt-4.1-mini",
            prompt_tokens=123_456,
            completion_tokens=7_890,
            pinch_original_tokens=150_000,
            pinch_final_tokens=123_000,
            estimated_cost_usd=0.00000040000000000000003,
            upstream_latency_ms=46.4,
            stream=False,
        ),
        decision(
            prompt_tokens=5,
            completion_tokens=2,
            usage_estimated=True,
            upstream_latency_ms=4_520.0,
            estimated_cost_usd=0.0493827,
        ),
    )
    body = staff_client.get(CHANGELIST).content.decode()

    for text in (
        "auto → gpt-4.1-mini",
        "123,456 → 7,890",
        ">27,000<",
        "&lt;$0.0001 (est.)",  # one precision down the column, not $0.0000004 beside $0.0494
        "46 ms",
        "≈ 5 → 2",
        "4.5 s",
        "$0.0494 (est.)",  # no usage billed: the router's estimate, marked as one
    ):
        assert text in body, text
    assert "icon-no.svg" not in body  # no red ✖ for "not streamed" in the list
    assert '<span class="failed">502</span>' not in body  # both rows answered 200


def test_a_failed_status_stands_out_in_the_list(staff_client, db):
    seed(decision(status_code=502), decision(status_code=200))
    body = staff_client.get(CHANGELIST).content.decode()
    assert '<td class="field-status"><span class="failed">502</span></td>' in body
    assert '<td class="field-status">200</td>' in body


def test_the_detail_page_shows_the_cost_and_counts_formatted(staff_client, db):
    (row,) = seed(
        decision(
            estimated_cost_usd=0.00000040000000000000003,
            measured_tokens=40_050,
            upstream_latency_ms=46.4,
            stream=False,
        )
    )
    body = staff_client.get(f"{CHANGELIST}{row.pk}/change/").content.decode()

    assert "&lt;$0.0001" in body and "0.00000040000000000000003" not in body
    assert "40,050" in body and "46 ms" in body
    assert "icon-no.svg" not in body


def test_the_detail_page_lets_an_operator_check_the_money(staff_client, default_config):
    """Billed, unpruned and net side by side, the prices they use and the cache prediction:
    the net is unpruned minus billed, to the cent, and a dearer request says so."""
    (cheaper, dearer) = seed(
        decision(
            chosen_model="gpt-4.1",
            billed_prompt_cost_usd=0.0255,
            unpruned_cost_usd=0.0400,
            predicted_cache_read_tokens=9_000,
            predicted_cache_write_tokens=1_000,
            cache_read_tokens=0,
            cache_write_tokens=10_000,
            cache_surprise="miss",
        ),
        decision(chosen_model="gpt-4.1", billed_prompt_cost_usd=0.0255, unpruned_cost_usd=0.0100),
    )
    body = staff_client.get(f"{CHANGELIST}{cheaper.pk}/change/").content.decode()
    text = " ".join(re.sub(r"<[^>]+>", " ", body).split())
    assert "Billed prompt: $0.0255" in text
    assert "Unpruned (est.): $0.0400" in text
    assert "Net saved with pinch: $0.0145" in text
    assert "Prices used (per 1M tokens): prompt $2, cached $0.5, completion $8" in text
    assert "read 9,000, written 1,000 → read 0, written 10,000 (miss)" in text

    body = staff_client.get(f"{CHANGELIST}{dearer.pk}/change/").content.decode()
    assert '<span class="failed">-$0.0155 (dearer)</span>' in body


def test_the_detail_page_reads_times_tries_and_tools_as_sentences_not_json(staff_client, db):
    (row,) = seed(
        decision(
            status_code=502,
            pinch_tools={"read_file": 2, "bash": 3},
            attempts=[
                {
                    "model": "gpt-4.1",
                    "result": "connect",
                    "status": None,
                    "ms": 12.0,
                    "reason": "cannot connect to provider 'openai'",
                },
                {"model": "gpt-4.1-mini", "result": "status", "status": 503, "ms": 812.5},
            ],
        )
    )
    body = staff_client.get(f"{CHANGELIST}{row.pk}/change/").content.decode()

    assert "bash: 3, read_file: 2" in body
    assert "gpt-4.1 · connect · 12 ms — cannot connect to provider &#x27;openai&#x27;<br>" in body
    assert "gpt-4.1-mini · status · HTTP 503 · 812 ms" in body
    assert '"result"' not in body and "{&quot;" not in body
    shown = row.created_at.strftime("%Y-%m-%d %H:%M:%S")
    assert shown in body
    assert " p.m." not in body and " a.m." not in body  # one time format on the page
    assert f"-decision-{row.pk}" in body  # the request id the client saw


@pytest.mark.parametrize(
    "value, savings",
    [
        ("yes", {1200, 300, 4500, 50, 9999}),
        ("no", {0}),
        ("off", {None}),
    ],
)
def test_the_pinch_filter_splits_pruned_unpruned_and_unmeasured(
    staff_client, savings_rows, value, savings
):
    response = staff_client.get(CHANGELIST, {"pruned": value})

    assert response.status_code == 200
    rows = RouteDecision.objects.filter(pk__in=shown(response))
    assert {row.pinch_tokens_saved for row in rows} == savings


def test_the_list_filters_by_path_model_tier_and_status(staff_client, savings_rows):
    response = staff_client.get(CHANGELIST)
    titles = {spec.title for spec in response.context["cl"].filter_specs}
    assert {"path", "chosen model", "tier", "status code", "pinch"} <= titles

    by_model = staff_client.get(CHANGELIST, {"chosen_model": "gpt-4.1-mini"})
    assert {r.chosen_model for r in RouteDecision.objects.filter(pk__in=shown(by_model))} == {
        "gpt-4.1-mini"
    }
    by_status = staff_client.get(CHANGELIST, {"status_code": "502"})
    assert len(shown(by_status)) == 1


def test_the_day_filter_narrows_to_a_day(staff_client, savings_rows):
    newest = RouteDecision.objects.order_by("-created_at").first().created_at
    response = staff_client.get(CHANGELIST, {"day": newest.date().isoformat()})

    assert response.status_code == 200
    shown_rows = response.context["cl"].result_list
    assert shown_rows
    assert all(r.created_at.date() == newest.date() for r in shown_rows)


def test_the_list_never_counts_or_scans_the_whole_log(staff_client, savings_rows):
    # Admin's own "N total" count and its SELECT DISTINCT choices would read every row.
    with CaptureQueriesContext(connection) as queries:
        response = staff_client.get(CHANGELIST)

    assert response.status_code == 200
    log_reads = [q["sql"] for q in queries if '"routing_routedecision"' in q["sql"]]
    assert not [sql for sql in log_reads if "DISTINCT" in sql.upper()]
    counts = [sql for sql in log_reads if "COUNT(" in sql.upper()]
    assert counts and all("LIMIT" in sql.upper() for sql in counts)


def test_decisions_cannot_be_added_changed_or_deleted(staff_client, savings_rows):
    row = savings_rows[0]
    change_url = f"{CHANGELIST}{row.pk}/change/"

    assert staff_client.get(f"{CHANGELIST}add/").status_code == 403
    assert staff_client.get(f"{CHANGELIST}{row.pk}/delete/").status_code == 403
    view = staff_client.get(change_url)
    assert view.status_code == 200
    assert 'name="chosen_model"' not in view.content.decode()  # shown, not editable
    assert 'name="_save"' not in view.content.decode()

    staff_client.post(change_url, {"chosen_model": "tampered"})
    row.refresh_from_db()
    assert row.chosen_model == "gpt-4.1"


def test_the_list_costs_the_same_queries_for_few_or_many_keys(
    staff_client, default_config, django_assert_max_num_queries
):
    # list_select_related joins the API key: one more row, or one more key, no more queries.
    seed(
        *(decision(age=timedelta(minutes=i), api_key=create_api_key(f"k{i}")[0]) for i in range(3))
    )
    with django_assert_max_num_queries(20) as few:
        staff_client.get(CHANGELIST)
    seed(*(decision(age=timedelta(hours=i), api_key=create_api_key(f"m{i}")[0]) for i in range(40)))
    with django_assert_max_num_queries(20) as many:
        response = staff_client.get(CHANGELIST)

    assert response.status_code == 200
    assert len(many.captured_queries) == len(few.captured_queries)
