"""The real Codex CLI against errors a retry cannot mend, with its retries at their defaults.

Codex retries a 429 or a 5xx by itself (4 request retries, 5 stream retries
by default) and reads no ``x-should-retry``: before issue 41 a broken config
file (then a 500) made it send 30 requests in 25 s and show "We're currently
experiencing high demand" instead of the router's message. Codex 0.171 takes
as final only a 400, a 404 coded ``model_not_found`` and a 429 coded
``insufficient_quota``, and retries any other status five times (about 7 s);
so on the Responses API every final error is answered so
(routing.errors.AGENT_RETRIED_FINALS: a wrong router key is a 400 there), and
Codex must stop after one request, showing the router's words.

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
from tests.support import final_errors
from tests.support.final_errors import REAL_CLIENT_CASES, break_config, refused_answers

# The Codex test's own fixtures and helpers: one way to install, set up and run Codex.
codex_bin, scratch_repo = codex_cli.codex_bin, codex_cli.scratch_repo
final_config = final_errors.final_config  # the final-error tests' config
SCRIPT, codex_home, run_codex = codex_cli.SCRIPT, codex_cli.codex_home, codex_cli.run_codex

pytestmark = pytest.mark.django_db(transaction=True)


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


@pytest.mark.parametrize(
    "case, model, shown",
    [("wrong router key", "script-agent", "Missing or invalid API key"), *REAL_CLIENT_CASES],
)
def test_codex_stops_at_a_final_error_after_one_request_showing_the_routers_message(
    case,
    model,
    shown,
    final_config,
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
        break_config(final_config, write_config)

    with caplog.at_level(logging.WARNING, logger="router.requests"):
        started = time.monotonic()
        key = "rk-wrong" if case == "wrong router key" else api_key
        done, _ = run_codex(codex_bin, scratch_repo, home, key)
        seconds = time.monotonic() - started

    report = (
        f"{seconds:.1f}s exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    )
    print(report)
    assert done.returncode != 0, report
    assert shown in done.stdout + done.stderr, report
    # How long it took is printed (speed is the benchmarks' to measure, not a test's).
    assert len(refused_answers(caplog)) == 1, report
    assert upstream.received == []


def test_codex_default_model_answers_through_the_shipped_alias(
    final_config, write_config, tmp_path, live_server, codex_bin, scratch_repo, upstream, api_key
):
    # Codex's default model sends its tools as an ``additional_tools`` input item,
    # which only a Responses upstream takes (the shipped openai provider is one):
    # auto's one candidate here is the test upstream's Responses model.
    data = final_config
    upstream.script = SCRIPT
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
