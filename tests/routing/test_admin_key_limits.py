"""A key's limits on its admin page: shown to staff, changed only with the permission, logged."""

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission

from routing.auth import create_api_key
from routing.models import ApiKey
from tests.support.decisions import decision, seed

pytestmark = pytest.mark.django_db

KEYS = "/admin/routing/apikey/"


def key_form(key: ApiKey, **changes) -> dict:
    data = {
        "name": key.name,
        "rpm_limit": "",
        "tpm_limit": "",
        "budget_usd": "",
        "soft_budget_usd": "",
        "budget_period": "month",
    }
    data.update(changes)
    return data


@pytest.fixture
def staff(django_user_model):
    user = django_user_model.objects.create_user("staff", password="x" * 12, is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_apikey", "change_apikey"])
    )
    return user


@pytest.fixture
def operator(staff):
    staff.user_permissions.add(Permission.objects.get(codename="change_key_limits"))
    return staff


def test_staff_without_the_permission_sees_the_limits_but_cannot_lift_them(
    client, staff, router_config
):
    key, _ = create_api_key("team-a", limits={"budget_usd": 5.0})
    client.force_login(staff)
    page = client.get(f"{KEYS}{key.pk}/change/")
    assert page.status_code == 200
    assert "Budget and rate limits" in page.content.decode()

    client.post(f"{KEYS}{key.pk}/change/", key_form(key, name="renamed", budget_usd="5000"))
    key.refresh_from_db()
    assert (key.name, key.budget_usd) == ("renamed", 5.0)


def test_an_operator_changes_limits_and_each_change_is_logged_before_and_after(
    client, operator, router_config
):
    key, _ = create_api_key("team-a", limits={"rpm_limit": 10})
    client.force_login(operator)
    response = client.post(
        f"{KEYS}{key.pk}/change/",
        key_form(key, rpm_limit="60", budget_usd="25", budget_period="week"),
    )
    assert response.status_code == 302
    key.refresh_from_db()
    assert (key.rpm_limit, key.budget_usd, key.budget_period) == (60, 25.0, "week")
    entry = LogEntry.objects.filter(object_id=str(key.pk)).latest("action_time")
    assert entry.user == operator
    assert "rpm_limit: 10 -> 60" in entry.change_message
    assert "budget_usd: null -> 25.0" in entry.change_message
    assert 'budget_period: "month" -> "week"' in entry.change_message


def test_a_soft_budget_above_the_hard_one_is_a_form_error_and_nothing_is_saved(
    client, operator, router_config
):
    key, _ = create_api_key("team-a")
    client.force_login(operator)
    response = client.post(
        f"{KEYS}{key.pk}/change/", key_form(key, budget_usd="5", soft_budget_usd="9")
    )
    assert response.status_code == 200
    assert "must not be above budget_usd" in str(response.context["adminform"].form.errors)
    key.refresh_from_db()
    assert key.budget_usd is None


def test_the_key_page_shows_what_it_spent_this_period(client, operator, router_config):
    key, _ = create_api_key("team-a", limits={"budget_usd": 5.0, "budget_period": "day"})
    seed(decision(api_key=key, chosen_model="echo-medium", estimated_cost_usd=1.5))
    client.force_login(operator)
    page = client.get(f"{KEYS}{key.pk}/change/").content.decode()
    assert "$1.50 this day" in page
    listing = client.get(KEYS).content.decode()
    assert "$5/day" in listing
