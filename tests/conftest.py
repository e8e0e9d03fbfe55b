"""Fixtures shared by every app's tests: a test upstream, a config file, API keys."""

import copy
import os
from pathlib import Path

import pytest
import yaml

from bench.corpus import corpus_dir as corpus_dir_path
from tests.upstream_server import UpstreamServer

CORPUS_DIR = corpus_dir_path()
PROVIDER_KEY_ENV = "TEST_PROVIDER_KEY"
PROVIDER_KEY = "sk-provider-secret-123"


def _model(model_id, tier, price, caps=("tools",), provider="up", window=32768, upstream=None):
    return {
        "id": model_id,
        "provider": provider,
        "upstream_model": upstream or model_id,
        "tier": tier,
        "context_window": window,
        "prompt_price": price,
        "cached_prompt_price": price / 4,
        "completion_price": price * 4,
        "capabilities": list(caps),
    }


def base_config(upstream_url: str) -> dict:
    return {
        "providers": {
            "up": {
                "kind": "openai",
                "base_url": upstream_url,
                "api_key_env": PROVIDER_KEY_ENV,
                "timeout_seconds": 2,
                "connect_timeout_seconds": 1,
            },
            "down": {
                "kind": "openai",
                "base_url": "http://127.0.0.1:9/v1",
                "timeout_seconds": 2,
                "connect_timeout_seconds": 1,
            },
        },
        "models": [
            _model("echo-small", "easy", 0.1),
            _model("echo-medium", "medium", 1.0, ("tools", "vision", "json_mode")),
            _model("echo-medium-pricey", "medium", 3.0, ("tools", "vision", "json_mode")),
            _model("echo-hard", "hard", 10.0, ("tools", "vision", "json_mode"), window=200000),
            _model("text-only", "medium", 0.5, ()),
            _model("slow-stream", "medium", 1.0),
            _model("hang-model", "medium", 1.0),
            _model("garbage-model", "medium", 1.0),
            _model("nousage-model", "medium", 1.0),
            _model("unreachable", "medium", 1.0, provider="down"),
        ],
        "routing": {
            "auto_model": "auto",
            "tiers": ["easy", "medium", "hard"],
            "default_tier": "medium",
        },
        "pinch": {
            "enabled": True,
            "budget_tokens": 50000,
            "keep_last_turns": 4,
            "keep_last_tool_results": 6,
            # Steps are tested in tests/pinch and the replay; here each request
            # should prune as the plain window says, whatever its length.
            "window_step": None,
            "relevance": {"enabled": False},
        },
        "objective": {"assumed_cache_rate": 0.0, "billing_reset_day": None},
    }


@pytest.fixture
def upstream():
    server = UpstreamServer().start()
    yield server
    server.stop()


@pytest.fixture
def write_config(tmp_path, settings):
    """write_config(data) -> path; the router reads it on the next request."""
    counter = {"n": 0}

    def write(data: dict) -> Path:
        counter["n"] += 1
        path = tmp_path / f"router-{counter['n']}.yaml"
        path.write_text(yaml.safe_dump(data))
        settings.ROUTER_CONFIG = str(path)
        return path

    return write


@pytest.fixture
def router_config(upstream, write_config, monkeypatch):
    """The standard test config, pointed at the test upstream; returns its data (a copy)."""
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    data = base_config(upstream.base_url)
    write_config(data)
    return copy.deepcopy(data)


@pytest.fixture
def api_key(db):
    from routing.auth import create_api_key

    key, raw = create_api_key("tests")
    return raw


@pytest.fixture
def corpus_dir():
    if not CORPUS_DIR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the shared corpus at {CORPUS_DIR}")
        pytest.skip(f"the shared corpus is not at {CORPUS_DIR} (set CORPUS_DIR)")
    return CORPUS_DIR
