"""The real opencode against errors a retry cannot mend: it stops at once, with the router's words.

opencode speaks chat completions through the AI SDK, which retries 408, 409,
429 and every 5xx (its ``APICallError.isRetryable``) and reads no
``x-should-retry``: a final error must be a 4xx outside those
(routing.errors.is_final). Each case runs ``opencode run`` with the README's
config naming the model; the router counts the answers it refused. Measured
with 1.18.33 (printed by each case): 2.9-4.0 s from the router's first
answer to opencode's exit (its start-up, 5-8 s here, apart).
"""

import json
import logging
import time

import pytest

from tests.routing import test_opencode as opencode
from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV, responses_config

# The opencode test's own fixtures and helpers: one way to install, set up and run it.
opencode_bin, scratch_repo = opencode.opencode_bin, opencode.scratch_repo

pytestmark = pytest.mark.django_db(transaction=True)


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
    return config


def refused(caplog) -> list[str]:
    return [
        f"{r.args[1]} {r.args[3]}"
        for r in caplog.records
        if r.name == "router.requests" and r.msg.startswith("answer_refused")
    ]


@pytest.mark.parametrize(
    "case, model, shown",
    [
        ("wrong router key", "script-agent", "Missing or invalid API key"),
        ("unknown model", "script-agnet", "Did you mean 'script-agent'"),
        ("provider key unset", "needs-key", "ROUTER_TEST_UNSET_KEY is not set"),
        ("config broken", "script-agent", "pinch.budget_tokens"),
    ],
)
def test_opencode_stops_at_a_final_error_showing_the_routers_message(
    case,
    model,
    shown,
    data,
    write_config,
    tmp_path,
    live_server,
    opencode_bin,
    scratch_repo,
    upstream,
    api_key,
    caplog,
):
    config = opencode.opencode_config(live_server.url)
    config["provider"]["router"]["models"] = {model: {}}
    config["model"] = config["small_model"] = f"router/{model}"
    (scratch_repo / "opencode.json").write_text(json.dumps(config))
    home = tmp_path / "home"
    home.mkdir()
    key = "rk-wrong" if case == "wrong router key" else api_key
    if case == "config broken":
        data["pinch"]["budget_tokens"] = -1
        write_config(data)

    with caplog.at_level(logging.WARNING, logger="router.requests"):
        started = time.time()
        done, _ = opencode.run_opencode(opencode_bin, scratch_repo, home, key)
        ended = time.time()

    # From the router's first answer to opencode's exit (its own start-up, ~5 s here, apart).
    first = min((r.created for r in caplog.records if r.name == "router.requests"), default=ended)
    seconds = ended - first
    report = f"{seconds:.1f}s after the request ({ended - started:.1f}s in all) exit "
    report += f"{done.returncode} refused {refused(caplog)}\n"
    report += f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    print(report)
    assert shown in done.stdout + done.stderr, report
    # Two calls, neither retried (the AI SDK would make three of each): the task's, and
    # the session title opencode asks its small model for. How long it took is printed
    # (speed is the benchmarks' to measure, not a test's).
    assert len(refused(caplog)) == 2, report
    assert upstream.received == []
