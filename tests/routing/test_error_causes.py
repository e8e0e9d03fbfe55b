"""Every error names its cause: the words a person needs to fix it, and a request id to quote.

Issue 25's list, one test each (a provider refusing its key: test_errors.py,
"relayed with the key redacted"): a base_url without /v1 names the URL; a bad Host names
the host and ALLOWED_HOSTS, with no traceback in the log; a broken config is
logged with its cause; the 413 names ROUTER_MAX_BODY_BYTES; the 401 on
/v1/messages speaks of x-api-key; a 400 names the caller's path, not
pydantic's; config errors read without "(top level):", cite the file and
suggest the key meant. And every answer carries X-Request-Id.
"""

import json
import logging
import re

import pytest
import yaml

from routing.config import ConfigError
from routing.config.schema import validate_config
from routing.config.source import DEFAULT_CONFIG_PATH, read_config_file
from routing.models import RouteDecision

HI = [{"role": "user", "content": "hi"}]
REQUEST_ID = re.compile(r"^\d{8}T\d{6}Z-([0-9a-f]{8}|decision-\d+)$")


@pytest.fixture
def post(client, router_config, api_key):
    def send(body, path="/v1/chat/completions", **headers):
        headers.setdefault("HTTP_AUTHORIZATION", f"Bearer {api_key}")
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        return client.post(path, raw, content_type="application/json", **headers)

    return send


def error_of(response, status):
    assert response.status_code == status, response.content
    return response.json()["error"]


@pytest.mark.django_db(transaction=True)
def test_a_base_url_without_v1_names_the_url_asked_and_the_fix(
    live_server, router_config, write_config, upstream, api_key
):
    import requests

    bare = upstream.base_url.removesuffix("/v1")
    router_config["providers"]["up"]["base_url"] = bare
    write_config(router_config)

    response = requests.post(
        f"{live_server.url}/v1/chat/completions",
        json={"model": "echo-medium", "messages": HI},
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=30,
    )

    error = error_of(response, 404)
    assert f"answered HTTP 404 at {bare}/chat/completions" in error["message"]
    assert "Its base_url has no /v1" in error["message"]
    assert "http://localhost:11434/v1" in error["message"]


def test_a_bad_host_names_the_host_and_allowed_hosts_without_a_traceback(client, db, caplog):
    with caplog.at_level(logging.WARNING):
        response = client.get("/v1/models", HTTP_HOST="evil.example")

    error = error_of(response, 400)
    assert error["code"] == "disallowed_host"
    assert "'evil.example'" in error["message"] and "ALLOWED_HOSTS" in error["message"]
    refused = [r for r in caplog.records if r.name == "django.security.DisallowedHost"]
    assert refused and "evil.example" in refused[0].getMessage()
    assert all(r.exc_info is None and not r.exc_text for r in refused)
    assert response["X-Request-Id"]


def test_a_broken_config_is_logged_with_its_cause(post, router_config, write_config, caplog):
    router_config["pinch"]["budget_tokens"] = -1
    write_config(router_config)

    with caplog.at_level(logging.ERROR):
        error = error_of(post({"model": "auto", "messages": HI}), 400)

    assert "pinch.budget_tokens" in error["message"]
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("routing.error")]
    assert any("config_invalid" in m and "pinch.budget_tokens" in m for m in logged)


def test_the_413_names_the_setting_that_raises_the_limit(post, settings):
    settings.ROUTER_MAX_BODY_BYTES = 1000

    error = error_of(
        post({"model": "echo-medium", "messages": [{"role": "user", "content": "x" * 2000}]}), 413
    )

    assert "ROUTER_MAX_BODY_BYTES" in error["message"]
    assert "ROUTER_MAX_BODY_BYTES=1000" in error["message"]


def test_the_401_on_messages_speaks_of_x_api_key(post):
    body = {"model": "claude-x", "max_tokens": 10, "messages": HI}

    response = post(body, path="/v1/messages", HTTP_AUTHORIZATION="")

    assert response.status_code == 401
    message = response.json()["error"]["message"]
    assert "x-api-key" in message and "ANTHROPIC_API_KEY" in message
    assert ".venv/bin/python manage.py createapikey NAME" in message


def test_the_401_on_chat_completions_names_the_bearer_header_and_the_venv_python(post):
    error = error_of(post({"model": "echo-medium", "messages": HI}, HTTP_AUTHORIZATION=""), 401)

    assert "Authorization: Bearer <router key>" in error["message"]
    assert "(create one with: .venv/bin/python manage.py createapikey NAME)" in error["message"]


@pytest.mark.parametrize(
    "message, says",
    [
        ({"role": "user", "content": 5}, "messages[0].content: must be a string or a list"),
        ({"role": "user", "content": [{"text": "a"}]}, "messages[0].content[0].type: required"),
        ({"role": "tool", "content": "x"}, "messages[0].tool_call_id: required"),
        ({"role": "wizard", "content": "x"}, "messages[0].role: must be one of 'system'"),
        ({"content": "x"}, "messages[0].role: required"),
    ],
)
def test_a_400_names_the_callers_path_not_pydantics(post, message, says):
    error = error_of(post({"model": "echo-medium", "messages": [message]}), 400)

    assert says in error["message"]
    for internal in (".user.", ".str", "list[ContentPart]", "Input tag", "discriminator"):
        assert internal not in error["message"]


def default_data():
    return yaml.safe_load(DEFAULT_CONFIG_PATH.read_text())


def test_a_cross_check_of_the_config_reads_without_top_level():
    data = default_data()
    data["models"][1]["provider"] = "nowhere"

    with pytest.raises(ConfigError) as caught:
        validate_config(data)

    assert str(caught.value) == "models.1.provider: unknown provider 'nowhere'"


def test_an_unknown_config_key_suggests_the_one_meant():
    data = default_data()
    data["pinch"]["budget_token"] = 5000

    with pytest.raises(ConfigError) as caught:
        validate_config(data)

    assert str(caught.value) == "pinch.budget_token: unknown key (did you mean 'budget_tokens'?)"


def test_a_yaml_error_cites_the_file_and_the_line(tmp_path):
    path = tmp_path / "router.yaml"
    path.write_text("pinch:\n  enabled: true\n   budget_tokens: 5\n")

    with pytest.raises(ConfigError) as caught:
        read_config_file(path)

    assert str(caught.value).startswith(f"{path}, line 3, column ")
    assert "<unicode string>" not in str(caught.value)


@pytest.mark.parametrize(
    "path, body, auth, status",
    [
        ("/v1/chat/completions", {"model": "gpt-9", "messages": HI}, True, 404),
        ("/v1/chat/completions", {"model": "echo-medium", "messages": HI}, False, 401),
        ("/v1/nowhere", {}, True, 404),
        ("/v1/chat/completions", {"model": "echo-medium"}, True, 400),
    ],
)
def test_every_answer_without_a_row_carries_a_request_id_that_is_logged(
    post, caplog, path, body, auth, status
):
    headers = {} if auth else {"HTTP_AUTHORIZATION": ""}
    with caplog.at_level(logging.WARNING, logger="router.requests"):
        response = post(body, path=path, **headers)

    assert response.status_code == status
    request_id = response["X-Request-Id"]
    assert REQUEST_ID.match(request_id), request_id
    assert any(request_id in r.getMessage() for r in caplog.records if r.name == "router.requests")
    assert RouteDecision.objects.count() == 0
