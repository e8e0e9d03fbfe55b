"""What a decision row says is what happened: no model charged when none ran, a pinned
prompt over its window said so, and a request id as the client saw it finds its row."""

import json

import pytest

from routing.models import RouteDecision

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def post(client, router_config, api_key):
    def send(body):
        return client.post(
            "/v1/chat/completions",
            json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {api_key}",
        )

    return send


def test_a_502_where_nothing_answered_charges_no_model(post, client):
    response = post({"model": "unreachable", "messages": HI})

    assert response.status_code == 502
    assert response["X-Router-Model"] == "none"
    decision = RouteDecision.objects.get()
    assert (decision.chosen_model, decision.provider, decision.estimated_cost_usd) == ("", "", 0.0)
    assert decision.requested_model == "unreachable"
    assert [a["model"] for a in decision.attempts] == ["unreachable", "unreachable"]
    metrics = client.get("/metrics", HTTP_ACCEPT="text/plain").content.decode()
    assert 'router_requests_total{model="none",path="passthrough",status="502"} 1.0' in metrics
    assert 'model="unreachable"' not in metrics


def test_a_pinned_model_gets_a_prompt_over_its_window_and_the_answer_says_so(post):
    huge = [{"role": "user", "content": "x" * 120_000}]  # ~40,000 tokens; the window is 32,768

    response = post({"model": "echo-medium", "messages": huge, "max_tokens": 100})

    assert response.status_code == 200
    header = response["X-Router-Window-Exceeded"]
    assert header.startswith("40") and "sent to echo-medium" in header
    assert header.endswith("whose context window is 32768")
    assert RouteDecision.objects.get().over_window is True


def test_a_prompt_within_the_window_carries_no_such_header(post):
    response = post({"model": "echo-medium", "messages": HI})

    assert response.status_code == 200
    assert "X-Router-Window-Exceeded" not in response
    assert RouteDecision.objects.get().over_window is False


def test_the_request_id_the_client_saw_finds_the_row_in_admin(post, admin_client):
    response = post({"model": "echo-medium", "messages": HI})
    request_id = response["X-Request-Id"]
    decision = RouteDecision.objects.get()

    assert request_id.endswith(f"-decision-{decision.pk}")
    listing = admin_client.get("/admin/routing/routedecision/", {"q": request_id})
    assert listing.status_code == 200
    assert f"/admin/routing/routedecision/{decision.pk}/change/" in listing.content.decode()
    assert listing.context["cl"].result_count == 1


def test_request_ids_sort_in_the_order_requests_came():
    from datetime import UTC, datetime, timedelta

    from routing.request_ids import decision_request_id

    earlier = decision_request_id(129, datetime(2026, 12, 1, 18, 32, 31, tzinfo=UTC))
    later = decision_request_id(
        67, datetime(2026, 12, 1, 18, 32, 31, tzinfo=UTC) + timedelta(seconds=1)
    )

    assert earlier == "20261201T183231Z-decision-129"
    assert sorted([later, earlier]) == [earlier, later]
