"""GET /metrics (JSON, or Prometheus text on request) and its METRICS_TOKEN guard."""

from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from metrics.summary import pinch_summary
from routing.models import ConfigOverride, RouteDecision
from tests.support.decisions import decision, seed

PROMETHEUS_SCRAPER_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)


@pytest.fixture
def decisions(db):
    return seed(
        decision(saved=600),
        decision(saved=0, status_code=502),
        decision(saved=200, path=RouteDecision.PATH_PASSTHROUGH),
        decision(status_code=None),
        decision(saved=5000, age=timedelta(days=40)),  # outside the window
    )


def test_it_answers_json_with_the_pinch_block_and_request_totals(client, default_config, decisions):
    response = client.get("/metrics")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["pinch"] == pinch_summary(default_config)
    # The 502 and the unanswered call are counted apart from the calls pinch's share is of.
    assert body["pinch"]["calls_30d"] == 2
    assert body["pinch"]["failed_calls_30d"] == 2
    assert body["pinch"]["share_pruned"] == 1.0
    assert body["pinch"]["total_tokens_saved"] == 800
    requests = body["requests"]
    assert requests["total"] == 4
    assert requests["by_path"] == {"passthrough": 1, "routed": 3}
    assert requests["by_status"] == {"200": 2, "502": 1, "unknown": 1}


def test_every_pinch_figure_is_a_number(client, default_config, decisions):
    pinch = client.get("/metrics").json()["pinch"]

    assert pinch and all(type(value) in (int, float) for value in pinch.values())


def test_the_pinch_block_is_left_out_when_pinch_is_disabled(client, default_config, decisions):
    ConfigOverride.objects.create(key="pinch.enabled", value=False)

    body = client.get("/metrics").json()

    assert "pinch" not in body
    assert body["requests"]["total"] == 4


def test_it_works_on_an_empty_database(client, default_config, db):
    body = client.get("/metrics").json()

    assert body["pinch"]["calls_30d"] == 0
    assert body["requests"]["total"] == 0
    assert body["requests"]["by_path"] == {}


@pytest.mark.parametrize(
    "accept, content_type",
    [
        ("text/plain", "text/plain; version=0.0.4; charset=utf-8"),
        (
            PROMETHEUS_SCRAPER_ACCEPT,
            "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores",
        ),
    ],
    ids=["text/plain", "a Prometheus scraper"],
)
def test_it_answers_prometheus_text_when_asked(
    client, default_config, decisions, accept, content_type
):
    response = client.get("/metrics", HTTP_ACCEPT=accept)

    assert response.status_code == 200
    assert response["Content-Type"] == content_type
    assert "Accept" in response["Vary"]
    assert b"router_requests_total" in response.content


@pytest.mark.parametrize(
    "accept",
    ["", "*/*", "application/json", "application/json, text/plain, */*", "text/html,*/*;q=0.8"],
)
def test_json_stays_the_default(client, default_config, db, accept):
    headers = {"HTTP_ACCEPT": accept} if accept else {}

    response = client.get("/metrics", **headers)

    assert response["Content-Type"] == "application/json"


def test_the_prometheus_path_answers_text_whatever_the_accept_header(
    client, default_config, decisions
):
    response = client.get("/metrics/prometheus", HTTP_ACCEPT="application/json")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    names = {family.name for family in text_string_to_metric_families(response.content.decode())}
    assert "router_requests" in names


@pytest.mark.parametrize("path", ["/metrics", "/metrics/prometheus"])
def test_only_get_is_allowed(client, default_config, db, path):
    response = client.post(path)

    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


# --- METRICS_TOKEN ---


@pytest.mark.parametrize("path", ["/metrics", "/metrics/prometheus"])
@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", "Bearer s3cret-metrics-token-extra", "Basic s3cret-metrics-token"],
    ids=["no header", "wrong token", "longer token", "not a bearer"],
)
def test_a_metrics_token_is_required_when_set(
    client, settings, default_config, db, path, authorization
):
    settings.METRICS_TOKEN = "s3cret-metrics-token"
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}

    response = client.get(path, **headers)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    error = response.json()["error"]
    assert error["type"] == "authentication_error"
    assert error["code"] == "invalid_metrics_token"
    assert "METRICS_TOKEN as Authorization: Bearer" in error["message"]
    assert "no METRICS_TOKEN is set" not in error["message"]


@pytest.mark.parametrize("path", ["/metrics", "/metrics/prometheus"])
def test_the_right_metrics_token_is_let_in(client, settings, default_config, db, path):
    settings.METRICS_TOKEN = "s3cret-metrics-token"

    response = client.get(path, HTTP_AUTHORIZATION="Bearer s3cret-metrics-token")

    assert response.status_code == 200


@pytest.mark.parametrize("path", ["/metrics", "/metrics/prometheus"])
def test_without_a_token_metrics_are_closed_unless_made_public(
    client, settings, default_config, db, path
):
    settings.METRICS_TOKEN = ""
    settings.METRICS_PUBLIC = False

    response = client.get(path)

    assert response.status_code == 401
    assert "METRICS_PUBLIC" in response.json()["error"]["message"]


@pytest.mark.parametrize("path", ["/metrics", "/metrics/prometheus"])
def test_a_signed_in_staff_user_follows_the_front_pages_link_without_a_token(
    client, settings, default_config, db, path, bare_staff_user
):
    settings.METRICS_TOKEN = "s3cret-metrics-token"
    settings.METRICS_PUBLIC = False
    client.force_login(bare_staff_user)

    assert client.get(path).status_code == 200


def test_a_signed_in_user_who_is_not_staff_still_needs_the_token(
    client, settings, default_config, db, django_user_model
):
    settings.METRICS_TOKEN = "s3cret-metrics-token"
    client.force_login(django_user_model.objects.create_user("visitor", password="x" * 12))

    assert client.get("/metrics").status_code == 401


@pytest.mark.parametrize("path", ["/metrics", "/metrics/prometheus"])
def test_public_metrics_need_no_token(client, settings, default_config, db, path):
    settings.METRICS_TOKEN = ""
    settings.METRICS_PUBLIC = True

    assert client.get(path).status_code == 200


def test_public_metrics_label_no_tool_names(client, settings, default_config, db):
    seed(decision(saved=400, pinch_tools={"tenant_secret_tool": 2}))
    settings.METRICS_TOKEN = ""
    settings.METRICS_PUBLIC = True
    public = client.get("/metrics/prometheus").content.decode()
    settings.METRICS_TOKEN = "s3cret-metrics-token"
    private = client.get(
        "/metrics/prometheus", HTTP_AUTHORIZATION="Bearer s3cret-metrics-token"
    ).content.decode()

    assert "tenant_secret_tool" not in public
    assert 'tool="tenant_secret_tool"' in private
