"""Errors a retry cannot mend stop the client at once; a rate limit or a 5xx is still retried.

The official SDKs (and Claude Code, which retries even a 401 for minutes)
obey ``x-should-retry`` before their own rules, and retry 408, 409, 429 and
every 5xx by themselves (so do Codex CLI and opencode's AI SDK): a final
error must carry the header and never be a 5xx (routing.errors.is_final).
Each case is sent once by each SDK with its default of two retries, and the
router counts the requests it refused (its ``answer_refused`` log line, one
per answer of 400 or more).
"""

import logging

import anthropic
import openai
import pytest

from routing.auth import create_api_key
from tests.support.decisions import decision, seed
from tests.support.final_errors import (
    UNSET_KEY_ENV,
    break_config,
    refused_answers,
    with_keyless_model,
)

pytestmark = pytest.mark.django_db(transaction=True)

RETRIES = 2


def chat(live_server, key, model, content, role="user"):
    sdk = openai.OpenAI(base_url=live_server.url + "/v1", api_key=key, max_retries=RETRIES)
    sdk.chat.completions.create(model=model, messages=[{"role": role, "content": content}])


def messages(live_server, key, model, content, role="user"):
    sdk = anthropic.Anthropic(base_url=live_server.url, api_key=key, max_retries=RETRIES)
    sdk.messages.create(model=model, max_tokens=20, messages=[{"role": role, "content": content}])


def responses(live_server, key, model, content, role="user"):
    sdk = openai.OpenAI(base_url=live_server.url + "/v1", api_key=key, max_retries=RETRIES)
    sdk.responses.create(model=model, input=[{"role": role, "content": content}], store=False)


# Claude Code speaks Messages; Codex CLI the Responses API; opencode, aider chat completions.
CLIENTS = {"openai-chat": chat, "anthropic-messages": messages, "openai-responses": responses}


@pytest.fixture(params=sorted(CLIENTS))
def client(request):
    return CLIENTS[request.param]


@pytest.fixture
def config(router_config, write_config, monkeypatch):
    """The test config plus ``needs-key``, on a provider whose key variable is unset."""
    monkeypatch.delenv(UNSET_KEY_ENV, raising=False)
    with_keyless_model(router_config)
    for name, upstream_model in [
        ("rate-limited", "ra-0-99-x"),
        ("failing", "fail-500-99-x"),
        ("unprocessable", "fail-422-99-x"),
    ]:
        router_config["models"].append(
            {
                "id": name,
                "provider": "up",
                "upstream_model": upstream_model,
                "tier": "medium",
                "context_window": 32768,
            }
        )
    write_config(router_config)
    return router_config


def failed(client, live_server, key, model, content="hi", role="user"):
    with pytest.raises((openai.APIStatusError, anthropic.APIStatusError)) as caught:
        client(live_server, key, model, content, role)
    return caught.value


def spent_key() -> str:
    key, raw = create_api_key("spent", limits={"budget_usd": 1.0, "budget_period": "month"})
    seed(decision(api_key=key, chosen_model="echo-medium", estimated_cost_usd=2.0))
    return raw


# Where a protocol's agents would retry the usual status, the one they take as final
# (routing.errors.AGENT_RETRIED_FINALS): Codex retries a 401, opencode's AI SDK a 429, and
# Codex shows its own "Quota exceeded" for OpenAI's 429 insufficient_quota, a 400's body as sent.
ANSWERED = {
    ("wrong router key", responses): 400,
    ("budget spent", chat): 400,
    ("budget spent", messages): 400,  # Anthropic's own answer to a spent limit
    ("budget spent", responses): 400,
}


@pytest.mark.parametrize(
    "case, model, status",
    [
        ("wrong router key", "echo-medium", 401),
        ("unknown model", "echo-meduim", 404),
        ("provider key unset", "needs-key", 400),
        ("config broken", "echo-medium", 400),
        ("budget spent", "echo-medium", None),
        ("bad request", "echo-medium", 400),
    ],
)
def test_a_final_error_is_sent_once_and_says_not_to_retry(
    case, model, status, client, live_server, api_key, config, write_config, upstream, caplog
):
    status = ANSWERED.get((case, client), status)
    key = {"wrong router key": "rk-wrong", "budget spent": spent_key}.get(case, api_key)
    if callable(key):
        key = key()
    if case == "config broken":
        break_config(config, write_config)
    role = "narrator" if case == "bad request" else "user"  # a role neither protocol has

    with caplog.at_level(logging.WARNING, logger="router.requests"):
        error = failed(client, live_server, key, model, role=role)

    assert error.status_code == status
    assert error.response.headers["x-should-retry"] == "false"
    assert len(refused_answers(caplog)) == 1, refused_answers(caplog)
    assert upstream.received == []


def test_an_upstreams_422_is_relayed_once_at_a_status_the_protocols_agents_take_as_final(
    client, live_server, api_key, config, upstream, caplog
):
    with caplog.at_level(logging.WARNING, logger="router.requests"):
        error = failed(client, live_server, api_key, "unprocessable")

    # Codex retries a 422 five times: on the Responses API it is a 400, the body as relayed.
    assert error.status_code == (400 if client is responses else 422)
    assert "scripted 422" in str(error)
    assert error.response.headers["x-should-retry"] == "false"
    assert len(refused_answers(caplog)) == 1
    assert len(upstream.received) == 1  # a 4xx is not tried again


def test_a_body_over_the_limit_is_sent_once(client, live_server, api_key, config, caplog, settings):
    settings.ROUTER_MAX_BODY_BYTES = 2000
    with caplog.at_level(logging.WARNING, logger="router.requests"):
        error = failed(client, live_server, api_key, "echo-medium", "x" * 5000)

    assert error.status_code == (400 if client is responses else 413)  # Codex retries a 413
    assert error.response.headers["x-should-retry"] == "false"
    assert len(refused_answers(caplog)) == 1


@pytest.mark.parametrize("model, status", [("rate-limited", 429), ("failing", 500)])
def test_an_upstream_rate_limit_or_5xx_is_still_retried_by_the_sdk(
    model, status, client, live_server, api_key, config, upstream, caplog
):
    with caplog.at_level(logging.WARNING, logger="router.requests"):
        error = failed(client, live_server, api_key, model)

    assert error.status_code == status
    assert "x-should-retry" not in error.response.headers
    if status == 429:
        assert error.response.headers["retry-after"] == "0"
    assert len(refused_answers(caplog)) == 1 + RETRIES
    assert len(upstream.received) == 2 * (1 + RETRIES)  # the router's own retry, each time
