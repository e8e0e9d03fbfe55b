"""GET /admin/api/snapshot: staff only; the pinch block, the knobs and recent decisions."""

from datetime import timedelta

import pytest
from django.urls import resolve, reverse

from metrics.summary import pinch_summary
from router_project.snapshot import build_snapshot, snapshot_view
from routing.auth import create_api_key, revoke_api_keys
from routing.models import ApiKey, ConfigOverride
from tests.support.decisions import decision, seed

URL = "/admin/api/snapshot"
DECISION_KEYS = [
    "id",
    "created_at",
    "path",
    "requested_model",
    "chosen_model",
    "tier",
    "status_code",
    "stream",
    "pinch_original_tokens",
    "pinch_final_tokens",
    "tokens_saved",
    "pinch_summarized",
    "relevance_used",
    "upstream_latency_ms",
    "prompt_tokens",
    "completion_tokens",
]


def bearer(raw_key):
    return {"HTTP_AUTHORIZATION": f"Bearer {raw_key}"}


def assert_forbidden(response):
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["type"] == "permission_error"
    assert error["code"] == "staff_only"


def test_anonymous_is_forbidden(client, default_config, db):
    assert_forbidden(client.get(URL))


def test_a_non_staff_key_is_forbidden(client, default_config, plain_key):
    assert_forbidden(client.get(URL, **bearer(plain_key)))


def test_an_unknown_key_is_forbidden(client, default_config, db):
    assert_forbidden(client.get(URL, **bearer("rk-not-a-key")))


def test_a_revoked_staff_key_is_forbidden(client, default_config, db):
    key, raw = create_api_key("old dashboard", is_staff=True)
    revoke_api_keys(ApiKey.objects.filter(pk=key.pk))

    assert_forbidden(client.get(URL, **bearer(raw)))


def test_a_non_staff_session_is_forbidden(client, default_config, django_user_model):
    user = django_user_model.objects.create_user("someone", password="x" * 12)
    client.force_login(user)

    assert_forbidden(client.get(URL))


def test_a_staff_key_reads_the_snapshot(client, default_config, staff_key):
    response = client.get(URL, **bearer(staff_key))

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert "no-cache" in response["Cache-Control"]
    assert set(response.json()) == {
        "pinch",
        "knobs",
        "config_overrides",
        "recent_decisions",
        "key_budgets",
        "generated_at",
        "savings_by_cause",
    }


def test_a_staff_session_reads_the_snapshot(client, default_config, staff_user):
    client.force_login(staff_user)

    response = client.get(URL)

    assert response.status_code == 200
    assert response.json()["knobs"]["pinch_enabled"] is True


def test_the_snapshot_is_a_page_of_the_router_admin_site():
    assert resolve(URL).func is snapshot_view
    assert reverse("admin:snapshot") == URL


def test_the_body_carries_the_pinch_summary_and_recent_decisions(client, default_config, staff_key):
    first, second = seed(
        decision(
            saved=400,
            age=timedelta(minutes=2),
            pinch_summarized=3,
            relevance_used=True,
            upstream_latency_ms=812.5,
            prompt_tokens=1200,
            completion_tokens=80,
            stream=True,
        ),
        decision(age=timedelta(minutes=1), chosen_model="qwen-small", status_code=None),
    )

    body = client.get(URL, **bearer(staff_key)).json()

    assert body["pinch"] == pinch_summary(default_config)
    assert body["pinch"]["total_tokens_saved"] == 400
    newest, older = body["recent_decisions"]
    assert list(older) == DECISION_KEYS
    assert newest["id"] == second.pk
    assert newest["tokens_saved"] is None
    assert newest["status_code"] is None
    assert older == {
        "id": first.pk,
        "created_at": first.created_at.isoformat(),
        "path": "routed",
        "requested_model": "auto",
        "chosen_model": "gpt-4.1",
        "tier": "hard",
        "status_code": 200,
        "stream": True,
        "pinch_original_tokens": 10_400,
        "pinch_final_tokens": 10_000,
        "tokens_saved": 400,
        "pinch_summarized": 3,
        "relevance_used": True,
        "upstream_latency_ms": 812.5,
        "prompt_tokens": 1200,
        "completion_tokens": 80,
    }


def test_recent_decisions_are_the_fifty_newest(default_config, db):
    seed(*(decision(age=timedelta(minutes=i)) for i in range(60)))

    recent = build_snapshot(default_config)["recent_decisions"]

    assert len(recent) == 50
    times = [row["created_at"] for row in recent]
    assert times == sorted(times, reverse=True)


@pytest.mark.parametrize(
    "key, knob",
    [
        ("pinch.enabled", "pinch_enabled"),
        ("pinch.prefix_probe", "pinch_prefix_probe"),
        ("pinch.relevance.enabled", "pinch_relevance_enabled"),
    ],
)
def test_knobs_follow_config_overrides(client, write_default_config, staff_key, key, knob):
    write_default_config({"pinch.relevance.enabled": True})  # every knob on, then one turned off
    ConfigOverride.objects.create(key=key, value=False)

    body = client.get(URL, **bearer(staff_key)).json()

    assert body["knobs"][knob] is False
    assert body["config_overrides"] == {key: False}
    others = {name: value for name, value in body["knobs"].items() if name != knob}
    assert all(value is True for value in others.values())


def test_pinch_is_null_when_disabled(client, default_config, staff_key):
    ConfigOverride.objects.create(key="pinch.enabled", value=False)

    body = client.get(URL, **bearer(staff_key)).json()

    assert body["pinch"] is None
    assert body["knobs"]["pinch_enabled"] is False


def test_only_get_is_allowed(client, default_config, staff_key):
    assert client.post(URL, **bearer(staff_key)).status_code == 405


def test_staff_without_the_view_permission_gets_no_decisions(
    client, default_config, bare_staff_user
):
    seed(decision(saved=400, requested_model="tenant-secret-model"))
    client.force_login(bare_staff_user)

    response = client.get(URL)

    assert response.status_code == 200
    assert response.json()["recent_decisions"] == []
    assert "tenant-secret-model" not in response.content.decode()
