"""What the final-error tests share: a model whose provider key is unset, a broken config,
the router's count of refused answers, and the cases every real client is run through.

The SDK test (tests/routing/test_final_errors.py) and the real clients'
(test_codex_final_errors.py, test_opencode_final_errors.py) provoke the same
errors and count the same way: one ``answer_refused`` line of the router's
log per answer of 400 or more.
"""

import pytest

from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV, responses_config

UNSET_KEY_ENV = "ROUTER_TEST_UNSET_KEY"

# (case, the model the client asks for, what it must show: the router's own words)
REAL_CLIENT_CASES = [
    ("unknown model", "script-agnet", "Did you mean 'script-agent'"),
    ("provider key unset", "needs-key", f"{UNSET_KEY_ENV} is not set"),
    ("config broken", "script-agent", "pinch.budget_tokens"),
]


def with_keyless_model(config: dict, template: str = "up") -> dict:
    """``config`` plus model ``needs-key``, on a copy of provider ``template`` whose key
    variable (UNSET_KEY_ENV, which the test unsets) is unset."""
    config["providers"]["keyless"] = {**config["providers"][template], "api_key_env": UNSET_KEY_ENV}
    config["models"].append(
        {"id": "needs-key", "provider": "keyless", "tier": "medium", "context_window": 32768}
    )
    return config


def break_config(config: dict, write_config) -> None:
    """The config file broken while the router runs (a value the schema refuses)."""
    config["pinch"]["budget_tokens"] = -1
    write_config(config)


def refused_answers(caplog) -> list[str]:
    """The router's refused answers, one ``<status> <path>`` each."""
    return [
        f"{r.args[1]} {r.args[3]}"
        for r in caplog.records
        if r.name == "router.requests" and r.msg.startswith("answer_refused")
    ]


@pytest.fixture
def final_config(upstream, write_config, monkeypatch):
    """The Responses test config plus ``needs-key``, written; its data (to break it)."""
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    monkeypatch.delenv(UNSET_KEY_ENV, raising=False)
    config = with_keyless_model(responses_config("http://127.0.0.1:9/unused", upstream.base_url))
    write_config(config)
    return config
