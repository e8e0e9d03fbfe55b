"""The real Codex CLI against errors a retry cannot mend, with its retries at their defaults.

Codex retries a 429 or a 5xx by itself (4 request retries, 5 stream retries
by default) and reads no ``x-should-retry``: before issue 41 a broken config
file (then a 500) made it send 30 requests in 25 s and show "We're currently
experiencing high demand" instead of the router's message. Measured with
0.171, it takes a 400 or a 404 as final but retries a 401 or a 424 five
times (about 7 s); so every final error the router can word is a 400 or a 404
(routing.errors.OPERATOR_FIX_STATUS), and Codex must stop after one request,
showing the router's words. (A wrong router key stays a 401, which Codex
retries five times before showing the router's message: about 7 s.)

Codex's own default model name (no ``model`` line in its config) must answer
through the shipped ``gpt-*`` alias.
"""

import logging
import time

import pytest
import yaml

from routing.config import DEFAULT_CONFIG_PATH
from routing.models import RouteDecision
from tests.routing import test_codex_cli as codex_cli
from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV, responses_config

# The Codex test's own fixtures and helpers: one way to install, set up and run Codex.
codex_bin, scratch_repo = codex_cli.codex_bin, codex_cli.scratch_repo
SCRIPT, codex_home, run_codex = codex_cli.SCRIPT, codex_cli.codex_home, codex_cli.run_codex

pytestmark = pytest.mark.django_db(transaction=True)

# The bar for the time from the request to the client showing the message.
FINAL_SECONDS = 5


@pytest.fixture
def data(upstream, write_config, monkeypatch):
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    monkeypatch.delenv("ROUTER_TEST_UNSET_KEY", raising=False)
    config = responses_config("http://127.0.0.1:9/unused", upstream.base_url)
    config["providers"]["keyless"] = {
        **config["providers"]["up"],
        "api_key_env": "ROUTER_TEST_UNSET_KEY",
    }
    config["models"].append(
        {"id": "needs-key", "provider": "keyless", "tier": "medium", "context_window": 32768}
    )
    write_config(config)
    upstream.script = SCRIPT
    return config


def home_for(tmp_path, live_server, model: str | None):
    """Codex's home as the README writes it, retries at their defaults; no model: its own."""
    home = codex_home(tmp_path, live_server.url, model or "auto")
    config = home / "config.toml"
    text = config.read_text().replace("request_max_retries = 0\n", "")
    text = text.replace("stream_max_retries = 0\n", "")
    if model is None:
        text = text.replace('model = "auto"', "", 1)
    config.write_text(text)
    return home


def refused(caplog) -> int:
    return sum(
        1
        for r in caplog.records
        if r.name == "router.requests" and r.msg.startswith("answer_refused")
    )


@pytest.mark.parametrize(
    "case, model, shown",
    [
        ("unknown model", "script-agnet", "Did you mean 'script-agent'"),
        ("provider key unset", "needs-key", "ROUTER_TEST_UNSET_KEY is not set"),
        ("config broken", "script-agent", "pinch.budget_tokens"),
    ],
)
def test_codex_stops_at_a_final_error_after_one_request_showing_the_routers_message(
    case,
    model,
    shown,
    data,
    write_config,
    tmp_path,
    live_server,
    codex_bin,
    scratch_repo,
    upstream,
    api_key,
    caplog,
):
    home = home_for(tmp_path, live_server, model)
    if case == "config broken":
        data["pinch"]["budget_tokens"] = -1
        write_config(data)

    with caplog.at_level(logging.WARNING, logger="router.requests"):
        started = time.monotonic()
        done, _ = run_codex(codex_bin, scratch_repo, home, api_key)
        seconds = time.monotonic() - started

    report = (
        f"{seconds:.1f}s exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    )
    print(report)
    assert done.returncode != 0, report
    assert shown in done.stdout + done.stderr, report
    assert refused(caplog) == 1, report
    assert seconds < FINAL_SECONDS, report
    assert upstream.received == []


def test_codex_default_model_answers_through_the_shipped_alias(
    data, write_config, tmp_path, live_server, codex_bin, scratch_repo, upstream, api_key
):
    # Codex's default model sends its tools as an ``additional_tools`` input item,
    # which only a Responses upstream takes (the shipped openai provider is one):
    # auto's one candidate here is the test upstream's Responses model.
    shipped = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text())
    data["aliases"] = shipped["aliases"]
    data["models"] = [m for m in data["models"] if m["id"] == "script-native"]
    data["models"][0]["tier"] = data["routing"]["default_tier"]
    write_config(data)
    home = home_for(tmp_path, live_server, None)

    done, _ = run_codex(codex_bin, scratch_repo, home, api_key)

    report = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, report
    assert codex_cli.FINAL in done.stdout, report
    rows = RouteDecision.objects.all()
    assert {(r.requested_model, r.path, r.chosen_model) for r in rows} == {
        ("gpt-6.2-sol", "routed", "script-native")
    }
