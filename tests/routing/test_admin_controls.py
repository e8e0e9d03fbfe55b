"""/admin/controls/: the pinch knobs and the persisted overrides, validated by the config schema."""

import pytest

from routing.config.store import current_config
from routing.models import ConfigOverride

CONTROLS = "/admin/controls/"
ALL_ON = {"pinch_enabled": "on", "pinch_relevance_enabled": "on", "pinch_prefix_probe": "on"}


@pytest.fixture
def default_config(write_default_config):
    """The shipped defaults with every knob on, so ALL_ON changes nothing."""
    return write_default_config({"pinch.relevance.enabled": True})


@pytest.fixture
def staff_client(client, staff_user):
    from django.contrib.auth.models import Permission

    staff_user.user_permissions.add(Permission.objects.get(codename="change_router_config"))
    client.force_login(staff_user)
    return client


def stored():
    return dict(ConfigOverride.objects.values_list("key", "value"))


def test_it_shows_the_three_knobs_and_flags_prefix_probe_in_both_panels(
    staff_client, default_config
):
    response = staff_client.get(CONTROLS)

    assert response.status_code == 200
    body = response.content.decode()
    for name in ("pinch_enabled", "pinch_prefix_probe", "pinch_relevance_enabled"):
        assert f'type="checkbox" name="{name}"' in body
    assert 'data-testid="measurement-only-knob"' in body
    assert 'data-testid="measurement-only-override"' in body
    assert body.count("routing and the payload sent are unchanged") == 2


@pytest.mark.parametrize("is_staff, status", [(False, 302), (None, 302)])
def test_it_is_for_staff_only(client, django_user_model, default_config, is_staff, status):
    if is_staff is not None:
        user = django_user_model.objects.create_user("agent", password="x" * 12)
        client.force_login(user)

    response = client.get(CONTROLS)

    assert response.status_code == status
    assert response["Location"].startswith("/admin/login/")


def test_the_admin_index_links_to_the_controls_and_the_dashboard(staff_client, default_config):
    body = staff_client.get("/admin/").content.decode()

    assert f'href="{CONTROLS}"' in body
    assert 'href="/dashboard/"' in body


def test_unticking_a_knob_saves_it_as_an_override_applied_on_the_next_request(
    staff_client, default_config, savings_rows
):
    form = dict(ALL_ON)
    del form["pinch_enabled"]

    response = staff_client.post(CONTROLS, {"panel": "knobs", **form})

    assert response.status_code == 302
    assert stored() == {"pinch.enabled": False}  # unchanged knobs are not pinned
    assert current_config().pinch.enabled is False
    dashboard = staff_client.get("/dashboard/").content.decode()
    assert "Pinch is disabled" in dashboard


def test_the_prefix_probe_knob_round_trips(staff_client, default_config):
    form = dict(ALL_ON)
    del form["pinch_prefix_probe"]
    staff_client.post(CONTROLS, {"panel": "knobs", **form})
    assert current_config().pinch.prefix_probe is False

    staff_client.post(CONTROLS, {"panel": "knobs", **ALL_ON})

    assert current_config().pinch.prefix_probe is True
    assert stored() == {"pinch.prefix_probe": True}


@pytest.mark.parametrize(
    "text, message",
    [
        ("pinch.budget_tokens: 0", "pinch.budget_tokens: Input should be greater than 0"),
        ("pinch.max_summarize_chars: 100", "pinch.max_summarize_chars: Input should be greater"),
        ("pinch.bogus: 1", "pinch.bogus: unknown key"),
        ("pinch.enabled: maybe", "pinch.enabled: Input should be a valid boolean"),
        ("routing.default_tier: legendary", "default_tier &#x27;legendary&#x27; is not one of"),
        ("just words", "line 2: expected &#x27;dotted.key: value&#x27;"),
        ("pinch.budget_tokens: [1, 2", "line 2: pinch.budget_tokens:"),
        (
            "pinch.budget_tokens: 1\npinch.budget_tokens: 2",
            "line 3: pinch.budget_tokens is set twice",
        ),
    ],
)
def test_a_bad_override_is_a_form_error_and_nothing_is_saved(
    staff_client, default_config, text, message
):
    ConfigOverride.objects.create(key="pinch.keep_last_turns", value=6)

    # Line 1 is valid: a bad line anywhere refuses the whole submission.
    response = staff_client.post(
        CONTROLS, {"panel": "overrides", "overrides": f"pinch.keep_last_turns: 9\n{text}"}
    )

    assert response.status_code == 200
    assert message in response.content.decode()
    assert stored() == {"pinch.keep_last_turns": 6}


def test_overrides_are_set_changed_and_removed_from_the_text_area(staff_client, default_config):
    ConfigOverride.objects.create(key="pinch.keep_last_turns", value=6)
    ConfigOverride.objects.create(key="objective.assumed_cache_rate", value=0.5)

    response = staff_client.post(
        CONTROLS,
        {
            "panel": "overrides",
            "overrides": "# tuned for long agent sessions\n"
            "pinch.budget_tokens: 40000\n"
            "pinch.relevance.backend: openai\n"
            "objective.assumed_cache_rate: 0.25\n",
        },
    )

    assert response.status_code == 302
    assert stored() == {
        "pinch.budget_tokens": 40000,
        "pinch.relevance.backend": "openai",
        "objective.assumed_cache_rate": 0.25,
    }
    config = current_config()
    assert (config.pinch.budget_tokens, config.pinch.keep_last_turns) == (40000, 4)
    page = staff_client.get(CONTROLS).content.decode()
    assert "pinch.budget_tokens: 40000" in page
    assert "pinch.relevance.backend: &quot;openai&quot;" in page


def test_a_null_override_is_saved(staff_client, default_config):
    response = staff_client.post(
        CONTROLS, {"panel": "overrides", "overrides": "pinch.protected_max_chars: null"}
    )

    assert response.status_code == 302
    assert current_config().pinch.protected_max_chars is None
