"""Every failure answers in the OpenAI error shape, with the right status, and no half row."""

import json
import re

import openai
import pytest

from routing.models import RouteDecision
from tests.support.config import PROVIDER_KEY

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def post(live_server, router_config, api_key):
    import requests

    def send(body, key=api_key, raw=None, headers=None):
        all_headers = {"Content-Type": "application/json"}
        if key:
            all_headers["Authorization"] = f"Bearer {key}"
        all_headers.update(headers or {})
        data = raw if raw is not None else json.dumps(body).encode()
        return requests.post(
            live_server.url + "/v1/chat/completions", data=data, headers=all_headers, timeout=30
        )

    return send


def assert_error(response, status, code=None):
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "code"}
    assert error["message"]
    if code:
        assert error["code"] == code
    return error


HI = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    "raw, code, words",
    [
        (b"{not json", "invalid_json", "not valid JSON"),
        (b'{"model": "echo-medium"}', "invalid_request", "messages"),
        (b'{"model": "echo-medium", "messages": []}', "invalid_request", "messages"),
        (
            b'{"model": "echo-medium", "messages": [{"role": "wizard", "content": "x"}]}',
            "invalid_role",
            "role",
        ),
        (b'{"messages": [{"role": "user", "content": "x"}]}', "invalid_request", "model"),
        (
            b'{"model": "echo-medium", "messages": [{"role": "tool", "content": "x"}]}',
            "invalid_request",
            "tool_call_id",
        ),
        (b"[1, 2]", "invalid_request", "JSON object"),
    ],
)
def test_bad_bodies_get_400_naming_the_problem_and_leave_no_row(post, raw, code, words):
    error = assert_error(post(None, raw=raw), 400, code)
    assert words in error["message"]
    assert RouteDecision.objects.count() == 0


@pytest.mark.parametrize("key", [None, "rk-wrong"])
def test_missing_or_wrong_key_gets_401(post, key):
    assert_error(post({"model": "echo-medium", "messages": HI}, key=key), 401, "invalid_api_key")
    assert RouteDecision.objects.count() == 0


def test_revoked_key_gets_401(post, api_key):
    from routing.auth import revoke_api_keys
    from routing.models import ApiKey

    revoke_api_keys(ApiKey.objects.all())
    assert_error(post({"model": "echo-medium", "messages": HI}), 401)


def test_unknown_model_gets_404_listing_the_known_ones(post):
    error = assert_error(post({"model": "gpt-9", "messages": HI}), 404, "model_not_found")
    assert "echo-medium" in error["message"]
    assert RouteDecision.objects.count() == 0


def test_body_over_the_limit_gets_413(post, settings):
    settings.ROUTER_MAX_BODY_BYTES = 1000
    big = [{"role": "user", "content": "x" * 2000}]
    assert_error(post({"model": "echo-medium", "messages": big}), 413, "body_too_large")
    assert RouteDecision.objects.count() == 0


def test_image_to_a_model_without_vision_gets_422_and_leaves_no_row(post):
    content = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]
    error = assert_error(
        post({"model": "text-only", "messages": [{"role": "user", "content": content}]}), 422
    )
    assert "images" in error["message"]
    assert RouteDecision.objects.count() == 0


def test_json_mode_to_a_model_without_it_gets_422_and_leaves_no_row(post, upstream):
    body = {"model": "text-only", "messages": HI, "response_format": {"type": "json_object"}}
    assert_error(post(body), 422, "unsupported_capability")
    assert RouteDecision.objects.count() == 0
    assert upstream.received == []


def test_unreachable_upstream_gets_502_and_is_recorded(post):
    assert_error(post({"model": "unreachable", "messages": HI}), 502, "upstream_unavailable")
    decision = RouteDecision.objects.get()
    assert decision.status_code == 502
    assert [a["result"] for a in decision.attempts] == ["connect", "connect"]


def test_upstream_answer_that_is_not_json_gets_502(post):
    assert_error(post({"model": "garbage-model", "messages": HI}), 502)
    assert RouteDecision.objects.get().status_code == 502


def test_upstream_that_hangs_gets_504(post):
    error = assert_error(post({"model": "hang-model", "messages": HI}), 504, "upstream_timeout")
    assert "0.5s" in error["message"]
    decision = RouteDecision.objects.get()
    assert decision.status_code == 504
    assert [a["result"] for a in decision.attempts] == ["timeout", "timeout"]


def test_stream_from_a_hanging_upstream_gets_504(post):
    response = post({"model": "hang-model", "messages": HI, "stream": True})
    assert_error(response, 504)


@pytest.mark.parametrize("status", [400, 429, 503])
def test_upstream_error_status_is_relayed(post, router_config, write_config, status):
    router_config["models"].append(
        {
            "id": "failing",
            "provider": "up",
            "upstream_model": f"fail-{status}-99-x",
            "tier": "medium",
            "context_window": 32768,
        }
    )
    write_config(router_config)
    error = assert_error(post({"model": "failing", "messages": HI}), status)
    assert error["message"] == f"scripted {status}"
    decision = RouteDecision.objects.get()
    # 429/5xx are retried once; a 400 is the caller's problem and is not.
    assert len(decision.attempts) == (1 if status == 400 else 2)


def test_context_too_large_for_every_model_gets_400_naming_the_size_and_the_largest_window(
    post, router_config
):
    huge = [{"role": "user", "content": "word " * 700_000}]
    error = assert_error(post({"model": "auto", "messages": huge}), 400, "context_length_exceeded")
    assert "measures" in error["message"]
    named = [
        f"(the largest: {m['id']!r}, {m['context_window']} tokens)" for m in router_config["models"]
    ]
    assert any(text in error["message"] for text in named), error["message"]
    assert "Add a model with a larger context_window" in error["message"]


def test_a_tier_with_no_model_at_or_above_it_gets_400_saying_so_not_a_window_too_small(
    post, router_config, write_config
):
    router_config["models"] = [m for m in router_config["models"] if m["tier"] == "easy"]
    write_config(router_config)
    task = [{"role": "user", "content": "Refactor the parser. " * 40}]  # no easy task

    error = assert_error(post({"model": "auto", "messages": task}), 400, "no_model_for_tier")

    tier = re.search(r"classified '(\w+)'", error["message"])[1]
    assert tier != "easy"
    assert f"no routable model of tier {tier!r} or above" in error["message"]


def test_sdk_raises_its_typed_errors(live_server, router_config, api_key):
    sdk = openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)
    with pytest.raises(openai.NotFoundError):
        sdk.chat.completions.create(model="nope", messages=HI)
    with pytest.raises(openai.UnprocessableEntityError):
        sdk.chat.completions.create(
            model="text-only", messages=HI, response_format={"type": "json_object"}
        )
    bad = openai.OpenAI(base_url=live_server.url + "/v1", api_key="rk-nope", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.chat.completions.create(model="echo-medium", messages=HI)


def test_upstream_failures_still_explain_the_decision_in_headers(post):
    response = post({"model": "unreachable", "messages": HI})
    assert response.status_code == 502
    decision = RouteDecision.objects.get()
    assert response.headers["X-Router-Decision-Id"] == str(decision.pk)
    assert response.headers["X-Router-Model"] == "none"  # nothing answered
    assert response.headers["X-Router-Path"] == "passthrough"


def test_credentials_in_a_provider_url_never_reach_the_error_message(
    post, router_config, write_config, caplog
):
    router_config["providers"]["down"]["base_url"] = "http://user:hunter2@127.0.0.1:9/v1"
    write_config(router_config)
    error = assert_error(post({"model": "unreachable", "messages": HI}), 502)
    assert "127.0.0.1:9" in error["message"]
    assert "hunter2" not in error["message"]
    assert "hunter2" not in caplog.text
    assert "hunter2" not in json.dumps(RouteDecision.objects.get().attempts)
    assert "hunter2" not in RouteDecision.objects.get().error


def test_a_provider_quoting_its_key_in_an_error_is_relayed_with_the_key_redacted(
    post, router_config, write_config
):
    router_config["models"].append(
        {
            "id": "picky",
            "provider": "up",
            "upstream_model": "quotes-key-x",
            "tier": "medium",
            "context_window": 32768,
        }
    )
    write_config(router_config)
    response = post({"model": "picky", "messages": HI})
    # Not the 401 the client would read as its own router key refused; final: only the
    # operator can mend it.
    error = assert_error(response, 400, "provider_key_rejected")
    assert response.headers["x-should-retry"] == "false"
    assert "Incorrect API key provided: [redacted]" in error["message"]
    # It names the provider and the variable its key comes from.
    assert "Provider 'up' refused the key in TEST_PROVIDER_KEY (HTTP 401" in error["message"]
    assert "Your router key was accepted" in error["message"]
    assert PROVIDER_KEY not in response.text
    assert PROVIDER_KEY not in RouteDecision.objects.get().error


@pytest.mark.parametrize("path", ["/v1/models", "/metrics", "/v1/chat/completions"])
def test_a_config_file_broken_while_running_answers_a_final_error_naming_the_key(
    live_server, api_key, router_config, write_config, path
):
    import requests

    router_config["pinch"]["budget_tokens"] = -1
    write_config(router_config)
    headers = {"Authorization": f"Bearer {api_key}"}
    if path.endswith("completions"):
        response = requests.post(
            live_server.url + path,
            json={"model": "auto", "messages": HI},
            headers=headers,
            timeout=10,
        )
    else:
        response = requests.get(live_server.url + path, headers=headers, timeout=10)
    # A 4xx no client retries, and says so: a retry cannot mend the file.
    error = assert_error(response, 400, "bad_config")
    assert response.headers["x-should-retry"] == "false"
    assert "pinch.budget_tokens" in error["message"]


def two_model_chain(router_config, first_provider, second_provider):
    """auto's easy tier: ``first`` (cheaper) then ``second``, on the given providers."""
    router_config["providers"]["keyless"] = {
        **router_config["providers"]["up"],
        "api_key_env": "ROUTER_TEST_UNSET_KEY",
    }
    router_config["models"] = [
        {
            "id": "first",
            "provider": first_provider,
            "upstream_model": "echo-1",
            "tier": "easy",
            "context_window": 32768,
            "prompt_price": 0.1,
        },
        {
            "id": "second",
            "provider": second_provider,
            "upstream_model": "echo-2",
            "tier": "easy",
            "context_window": 32768,
            "prompt_price": 0.2,
        },
    ]
    return router_config


def test_when_every_candidate_fails_the_answer_says_what_was_tried_and_why(
    post, router_config, write_config, upstream, monkeypatch, caplog
):
    monkeypatch.delenv("ROUTER_TEST_UNSET_KEY", raising=False)
    write_config(two_model_chain(router_config, "down", "keyless"))

    response = post({"model": "auto", "messages": HI})

    error = assert_error(response, 502, "upstream_unavailable")
    assert error["message"] == (
        "No upstream answered. Tried first: cannot connect to provider 'down' at "
        "http://127.0.0.1:9/v1 (2 tries); second: provider 'keyless': the environment "
        "variable ROUTER_TEST_UNSET_KEY is not set."
    )
    assert upstream.received == []  # nothing is sent without the key
    decision = RouteDecision.objects.get()
    # No model ran: none is named, none is charged (the attempts say which were tried).
    assert response.headers["X-Router-Model"] == "none"
    assert (decision.chosen_model, decision.estimated_cost_usd) == ("", 0.0)
    assert [a["result"] for a in decision.attempts] == ["connect", "connect", "unconfigured"]
    assert "ROUTER_TEST_UNSET_KEY is not set" in decision.error
    failures = [r for r in caplog.records if r.levelname == "WARNING" and "upstream" in r.msg]
    assert len(failures) == 1  # one line per request, not one per attempt


def test_a_provider_whose_key_is_unset_is_skipped_for_the_next_candidate(
    post, router_config, write_config, upstream, monkeypatch
):
    monkeypatch.delenv("ROUTER_TEST_UNSET_KEY", raising=False)
    write_config(two_model_chain(router_config, "keyless", "up"))

    response = post({"model": "auto", "messages": HI})

    assert response.status_code == 200, response.text
    assert response.headers["X-Router-Model"] == "second"
    assert [r["headers"]["Authorization"] for r in upstream.received] == [f"Bearer {PROVIDER_KEY}"]
    decision = RouteDecision.objects.get()
    assert [a["result"] for a in decision.attempts] == ["unconfigured", "ok"]


def test_only_unset_keys_answer_provider_key_missing(
    post, router_config, write_config, monkeypatch
):
    monkeypatch.delenv("ROUTER_TEST_UNSET_KEY", raising=False)
    write_config(two_model_chain(router_config, "keyless", "keyless"))

    response = post({"model": "auto", "messages": HI})
    error = assert_error(response, 400, "provider_key_missing")
    assert response.headers["x-should-retry"] == "false"
    assert error["message"].count("ROUTER_TEST_UNSET_KEY is not set") == 2
