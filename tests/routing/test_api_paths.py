"""Every path under /v1 answers JSON in the OpenAI shape; answers carry a request id."""

import openai
import pytest
import requests

from routing.models import RouteDecision
from routing.request_ids import decision_request_id

pytestmark = pytest.mark.django_db(transaction=True)

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def sdk(live_server, router_config, api_key):
    return openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)


@pytest.mark.parametrize(
    "method, path",
    [
        ("POST", "/v1/responses/resp_1/cancel"),
        ("POST", "/v1/embeddings"),
        ("GET", "/v1/files"),
        ("POST", "/v1/chat/completions/extra"),
        ("DELETE", "/v1/"),
    ],
)
def test_an_unserved_v1_path_answers_a_json_404_listing_the_served_endpoints(
    live_server, router_config, api_key, method, path
):
    response = requests.request(
        method,
        live_server.url + path,
        json={"model": "auto", "input": "hi"},
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=10,
    )

    assert response.status_code == 404
    assert response.headers["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == "unknown_endpoint"
    assert f"{method} {path}" in error["message"]
    for served in (
        "POST /v1/chat/completions",
        "POST /v1/responses",
        "GET /v1/responses/{id}",
        "GET /v1/models",
        "GET /v1/models/{id}",
    ):
        assert served in error["message"]


def test_the_sdk_gets_a_not_found_error_from_an_unserved_endpoint(sdk):
    with pytest.raises(openai.NotFoundError) as caught:
        sdk.embeddings.create(model="auto", input="hi")
    assert "It serves: POST /v1/chat/completions" in caught.value.message


def test_models_retrieve_returns_one_model_or_a_404(sdk):
    model = sdk.models.retrieve("echo-hard")
    assert (model.id, model.object, model.owned_by) == ("echo-hard", "model", "up")
    assert model.model_extra["context_window"] == 200000
    assert sdk.models.retrieve("auto").owned_by == "router"

    with pytest.raises(openai.NotFoundError) as caught:
        sdk.models.retrieve("gpt-nope")
    assert caught.value.code == "model_not_found"


def test_models_retrieve_needs_a_router_key(live_server, router_config):
    bad = openai.OpenAI(base_url=live_server.url + "/v1", api_key="rk-nope", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.models.retrieve("echo-hard")


def test_an_answer_carries_the_decision_as_its_request_id(sdk):
    reply = sdk.chat.completions.create(model="echo-medium", messages=HI)
    decision = RouteDecision.objects.get()
    assert reply._request_id == decision_request_id(decision.pk, decision.created_at)

    stream = sdk.chat.completions.with_raw_response.create(
        model="echo-medium", messages=HI, stream=True
    )
    list(stream.parse())  # a stream's row is written when its answer ends, before [DONE]
    newest = RouteDecision.objects.order_by("-pk").first()
    assert stream.headers["x-request-id"].endswith(f"-decision-{newest.pk}")


def test_an_upstream_failure_carries_the_request_id_too(sdk):
    with pytest.raises(openai.APIStatusError) as caught:
        sdk.chat.completions.create(model="unreachable", messages=HI)
    assert caught.value.request_id.endswith(f"-decision-{RouteDecision.objects.get().pk}")


def test_v1_without_a_slash_answers_the_json_404_too(live_server, router_config):
    response = requests.get(live_server.url + "/v1", timeout=10)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "unknown_endpoint"


def test_a_crash_under_v1_answers_json_not_djangos_html_page(
    client, router_config, api_key, monkeypatch
):
    def crash(raw):
        raise RuntimeError("a bug")

    monkeypatch.setattr("routing.protocols.chat.request.parse_chat_body", crash)
    client.raise_request_exception = False
    response = client.post(
        "/v1/chat/completions",
        {"model": "auto", "messages": HI},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api_key}",
    )

    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "internal_error"
    assert "a bug" not in response.content.decode()


@pytest.mark.parametrize(
    "path, served, shape",
    [
        ("/chat/completions", "/v1/chat/completions", "openai"),
        ("/responses", "/v1/responses", "openai"),
        ("/models", "/v1/models", "openai"),
        ("/messages", "/v1/messages", "anthropic"),
        ("/v1/v1/messages", "/v1/messages", "anthropic"),
        ("/v1/v1/chat/completions", "/v1/chat/completions", "openai"),
    ],
)
def test_a_completion_path_under_the_wrong_base_url_is_a_json_404_naming_the_right_one(
    live_server, router_config, api_key, path, served, shape
):
    response = requests.post(
        live_server.url + path,
        json={"model": "auto", "messages": HI},
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=10,
    )

    assert response.status_code == 404
    assert response.headers["Content-Type"].startswith("application/json")
    body = response.json()
    message = body["error"]["message"]
    assert f"serves POST {served}, not {path}" in message
    assert f"{live_server.url}/v1 for OpenAI clients" in message
    assert f"or to {live_server.url} for Claude Code" in message
    if shape == "anthropic":
        assert body["type"] == "error" and body["error"]["type"] == "not_found_error"
    else:
        assert body["error"]["code"] == "wrong_base_url"
    assert RouteDecision.objects.count() == 0
