"""Staff is not superuser: the controls need a permission, provider settings are file-only.

The attack of issue 13: a staff login with no permissions pointed
``providers.<name>.base_url`` at its own server and ``api_key_env`` at
METRICS_TOKEN, and the next client request carried that secret there.
"""

import pytest
import requests
from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.auth.models import Permission

from routing.models import ConfigOverride
from tests.support.config import PROVIDER_KEY
from tests.support.openai_upstream import UpstreamServer

pytestmark = pytest.mark.django_db(transaction=True)

CONTROLS = "/admin/controls/"
METRICS_SECRET = "metrics-token-that-must-stay-home"


@pytest.fixture
def attacker():
    server = UpstreamServer().start()
    yield server
    server.stop()


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("staff", password="x" * 12, is_staff=True)


@pytest.fixture
def operator(django_user_model):
    user = django_user_model.objects.create_user("operator", password="x" * 12, is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="change_router_config"))
    return user


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_superuser("root", password="x" * 12)


def post_overrides(client, user, text):
    client.force_login(user)
    return client.post(CONTROLS, {"panel": "overrides", "overrides": text})


def redirect_to(attacker):
    return f"providers.up.base_url: {attacker.base_url}\nproviders.up.api_key_env: METRICS_TOKEN"


def ask(live_server, api_key):
    return requests.post(
        live_server.url + "/v1/chat/completions",
        json={"model": "echo-medium", "messages": [{"role": "user", "content": "hi"}]},
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=10,
    )


def test_staff_without_the_permission_cannot_open_or_post_the_controls(
    client, staff, router_config, attacker
):
    client.force_login(staff)
    assert client.get(CONTROLS).status_code == 403

    response = post_overrides(client, staff, redirect_to(attacker))

    assert response.status_code == 403
    assert ConfigOverride.objects.count() == 0
    assert LogEntry.objects.count() == 0


@pytest.mark.parametrize("who", ["operator", "superuser"])
def test_no_one_can_redirect_a_provider_key_from_admin(
    client, request, who, router_config, attacker, upstream, api_key, live_server, monkeypatch
):
    monkeypatch.setenv("METRICS_TOKEN", METRICS_SECRET)
    user = request.getfixturevalue(who)

    response = post_overrides(client, user, redirect_to(attacker))

    assert response.status_code == 200
    assert "come from the config file only" in response.content.decode()
    assert ConfigOverride.objects.count() == 0
    assert ask(live_server, api_key).status_code == 200
    assert attacker.received == []
    (sent,) = upstream.received
    assert sent["headers"]["Authorization"] == f"Bearer {PROVIDER_KEY}"


@pytest.mark.parametrize(
    "line",
    [
        "providers: {up: {kind: openai, base_url: 'http://127.0.0.1:1/v1'}}",
        "providers.up: {kind: openai, base_url: 'http://127.0.0.1:1/v1'}",
        "pinch.relevance.base_url: 'http://127.0.0.1:1/v1'",
        "pinch.relevance.api_key_env: METRICS_TOKEN",
        "pinch.relevance: {enabled: true, api_key_env: METRICS_TOKEN}",
        "pinch: {relevance: {api_key_env: METRICS_TOKEN}}",
    ],
)
def test_every_key_that_decides_where_a_key_goes_is_refused(client, superuser, router_config, line):
    response = post_overrides(client, superuser, line)

    assert "come from the config file only" in response.content.decode()
    assert ConfigOverride.objects.count() == 0


def test_a_provider_override_already_in_the_database_is_ignored(
    router_config, attacker, upstream, api_key, live_server, monkeypatch
):
    monkeypatch.setenv("METRICS_TOKEN", METRICS_SECRET)
    ConfigOverride.objects.create(key="providers.up.base_url", value=attacker.base_url)
    ConfigOverride.objects.create(key="providers.up.api_key_env", value="METRICS_TOKEN")

    assert ask(live_server, api_key).status_code == 200

    assert attacker.received == []
    assert upstream.received[0]["headers"]["Authorization"] == f"Bearer {PROVIDER_KEY}"


def test_every_change_leaves_an_admin_log_entry_with_who_before_and_after(
    client, operator, router_config
):
    post_overrides(client, operator, "pinch.budget_tokens: 40000")
    post_overrides(client, operator, "pinch.budget_tokens: 30000")
    post_overrides(client, operator, "")

    entries = list(LogEntry.objects.order_by("id"))
    assert [(e.user_id, e.object_repr, e.action_flag) for e in entries] == [
        (operator.pk, "pinch.budget_tokens", ADDITION),
        (operator.pk, "pinch.budget_tokens", CHANGE),
        (operator.pk, "pinch.budget_tokens", DELETION),
    ]
    assert [e.get_change_message() for e in entries] == [
        "pinch.budget_tokens: 50000 -> 40000",
        "pinch.budget_tokens: 40000 -> 30000",
        "pinch.budget_tokens: 30000 -> 50000",
    ]


def test_a_knob_flip_is_logged_too(client, operator, router_config):
    client.force_login(operator)
    client.post(CONTROLS, {"panel": "knobs", "pinch_prefix_probe": "on"})

    (entry,) = LogEntry.objects.all()
    assert entry.user_id == operator.pk
    assert entry.get_change_message() == "pinch.enabled: true -> false"


def test_revoking_a_key_from_admin_is_logged(client, superuser):
    from routing.auth import create_api_key

    key, _ = create_api_key("agent")
    client.force_login(superuser)
    client.post(
        "/admin/routing/apikey/",
        {"action": "revoke", "_selected_action": [key.pk]},
    )

    key.refresh_from_db()
    assert key.revoked_at is not None
    (entry,) = LogEntry.objects.all()
    assert (entry.user_id, entry.object_id, entry.get_change_message()) == (
        superuser.pk,
        str(key.pk),
        "Revoked",
    )
