"""Django admin: the model registry validates through the config schema; API keys are shown once."""

import html
import re

import pytest

from routing.auth import create_api_key
from routing.config.store import current_config, set_overrides
from routing.models import ApiKey, RegisteredModel, hash_key

MODELS = "/admin/routing/registeredmodel/"
KEYS = "/admin/routing/apikey/"


@pytest.fixture
def staff_client(client, staff_user):
    staff_user.is_superuser = True
    staff_user.save()
    client.force_login(staff_user)
    return client


def model_form(**changes):
    data = {
        "model_id": "local-coder",
        "provider": "local",
        "upstream_model": "qwen2.5-coder:7b",
        "tier": "medium",
        "context_window": 32768,
        "prompt_price": "0",
        "cached_prompt_price": "",
        "completion_price": "0",
        "supports_tools": "on",
    }
    data.update(changes)
    return data


# --- model registry -------------------------------------------------------------------


def test_a_valid_model_is_saved_and_joins_the_effective_config(staff_client, default_config):
    response = staff_client.post(f"{MODELS}add/", model_form())

    assert response.status_code == 302
    assert RegisteredModel.objects.get().model_id == "local-coder"
    assert current_config().model("local-coder").tier == "medium"


@pytest.mark.parametrize(
    "changes, field, message",
    [
        ({"provider": "nowhere"}, "provider", "unknown provider 'nowhere'"),
        ({"tier": "legendary"}, "tier", "'legendary' is not one of routing.tiers"),
        ({"context_window": "0"}, "context_window", "greater than 0"),
        ({"model_id": "auto"}, None, "routing.auto_model: must not also be a model id"),
    ],
)
def test_a_model_the_schema_refuses_is_a_form_error_and_nothing_is_saved(
    staff_client, default_config, changes, field, message
):
    response = staff_client.post(f"{MODELS}add/", model_form(**changes))

    assert response.status_code == 200
    form = response.context["adminform"].form
    errors = form.errors.get(field or "__all__", [])
    assert any(message in error for error in errors), form.errors
    assert RegisteredModel.objects.count() == 0


def test_an_edit_that_breaks_the_config_leaves_the_row_as_it_was(staff_client, default_config):
    staff_client.post(f"{MODELS}add/", model_form())
    row = RegisteredModel.objects.get()

    response = staff_client.post(f"{MODELS}{row.pk}/change/", model_form(tier="legendary"))

    assert response.status_code == 200
    assert "tier" in response.context["adminform"].form.errors
    row.refresh_from_db()
    assert row.tier == "medium"


def test_a_registered_model_replaces_the_file_model_of_the_same_id(staff_client, default_config):
    response = staff_client.post(
        f"{MODELS}add/", model_form(model_id="gpt-4.1-mini", provider="openai", prompt_price="9")
    )

    assert response.status_code == 302
    assert current_config().model("gpt-4.1-mini").prompt_price == 9.0


def test_a_model_the_config_still_uses_cannot_be_deleted(staff_client, default_config):
    staff_client.post(f"{MODELS}add/", model_form())
    row = RegisteredModel.objects.get()
    set_overrides({"classifier.backend": "llm", "classifier.llm": {"model": "local-coder"}})

    page = staff_client.get(f"{MODELS}{row.pk}/delete/")
    confirmed = staff_client.post(f"{MODELS}{row.pk}/delete/", {"post": "yes"})

    shown = html.unescape(page.content.decode())
    assert "the config would be invalid without it" in shown
    assert "unknown model 'local-coder'" in shown
    assert confirmed.status_code == 200  # the "cannot delete" page again, not a redirect
    assert RegisteredModel.objects.filter(pk=row.pk).exists()
    assert current_config().classifier.llm.model == "local-coder"


def test_a_model_nothing_else_uses_is_deleted(staff_client, default_config):
    staff_client.post(f"{MODELS}add/", model_form())
    row = RegisteredModel.objects.get()

    response = staff_client.post(f"{MODELS}{row.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not RegisteredModel.objects.exists()
    assert current_config().model("local-coder") is None


# --- API keys -------------------------------------------------------------------------


def test_the_add_form_asks_only_a_name_and_the_staff_flag(staff_client, db):
    response = staff_client.get(f"{KEYS}add/")

    assert response.status_code == 200
    assert set(response.context["adminform"].form.fields) == {"name", "is_staff"}


def test_adding_a_key_shows_the_raw_key_once_and_stores_only_its_hash(staff_client, db):
    response = staff_client.post(f"{KEYS}add/", {"name": "laptop", "is_staff": "on"}, follow=True)

    assert response.status_code == 200
    texts = [str(m) for m in response.context["messages"]]
    raw = re.search(r"\b(rk-[A-Za-z0-9_-]{20,})\b", " ".join(texts)).group(1)
    key = ApiKey.objects.get()
    assert (key.name, key.is_staff) == ("laptop", True)
    assert key.key_hash == hash_key(raw)
    assert raw not in (key.prefix, key.key_hash) and raw.startswith(key.prefix)

    # Shown once: the next page no longer carries it.
    again = staff_client.get(KEYS)
    assert raw not in again.content.decode()


def test_editing_a_key_keeps_its_secret(staff_client, db):
    key, raw = create_api_key("laptop")

    response = staff_client.post(
        f"{KEYS}{key.pk}/change/", {"name": "old laptop", "is_staff": "on"}, follow=True
    )

    assert response.status_code == 200
    key.refresh_from_db()
    assert (key.name, key.is_staff) == ("old laptop", True)
    assert key.key_hash == hash_key(raw)


def test_the_key_hash_is_never_displayed(staff_client, db):
    key, _ = create_api_key("ci")

    for url in (KEYS, f"{KEYS}{key.pk}/change/"):
        body = staff_client.get(url).content.decode()
        assert key.key_hash not in body
        assert "key_hash" not in body


def test_the_revoke_action_revokes_the_selected_keys(staff_client, db):
    laptop, _ = create_api_key("laptop")
    ci, _ = create_api_key("ci")
    kept, _ = create_api_key("kept")

    response = staff_client.post(
        KEYS, {"action": "revoke", "_selected_action": [laptop.pk, ci.pk]}, follow=True
    )

    assert response.status_code == 200
    assert "Revoked 2 API key(s)." in [str(m) for m in response.context["messages"]]
    assert set(ApiKey.objects.active()) == {kept}


def test_the_registry_page_lists_the_config_files_models_beside_its_own(
    staff_client, default_config
):
    response = staff_client.get("/admin/routing/registeredmodel/")

    body = response.content.decode()
    assert response.status_code == 200
    assert f"Models the router serves ({len(default_config.models)})" in body
    for model in default_config.models:
        assert f'data-model-id="{model.id}"' in body
    assert "config file" in body
    assert "0 registered models" in body  # the registry's own rows: none, and now explained
