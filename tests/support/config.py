"""The standard test config: a test upstream, a dead provider, models of every tier."""

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
            # The same upstream with a short read timeout, for the models that hang:
            # a timeout test then costs two tries of half a second, not of two.
            "stuck": {
                "kind": "openai",
                "base_url": upstream_url,
                "api_key_env": PROVIDER_KEY_ENV,
                "timeout_seconds": 0.5,
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
            _model("hang-model", "medium", 1.0, provider="stuck"),
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
            # The budget prune: these tests hold its contracts. The payback
            # steps (the default) have their own config in their tests.
            "payback": {"enabled": False},
            # No holdout: these tests hold what pinch does to every conversation;
            # the arms have their own tests (tests/routing/test_experiments.py).
            "holdout_share": 0.0,
            # No recall tool: these tests hold that the client's tools reach the
            # upstream as sent; the router's own tool has its tests
            # (tests/routing/test_recall_*.py, tests/support/recall_scenario.py).
            "recall": {"enabled": False},
        },
        "objective": {"assumed_cache_rate": 0.0, "billing_reset_day": None},
    }


ANTHROPIC_KEY_ENV = "TEST_ANTHROPIC_KEY"
ANTHROPIC_KEY = "sk-ant-test-secret-456"


def claude_model(model_id, tier="medium", price=3.0, upstream=None, **extra):
    """A Claude model on the Anthropic test upstream (provider ``claude``)."""
    return {
        "id": model_id,
        "provider": "claude",
        "upstream_model": upstream or model_id,
        "tier": tier,
        "context_window": 200000,
        "prompt_price": price,
        "cached_prompt_price": price / 10,
        "completion_price": price * 5,
        "capabilities": ["tools", "vision", "json_mode"],
        "cache": {"min_tokens": 1024},
        **extra,
    }


def anthropic_config(anthropic_url: str, openai_url: str) -> dict:
    """The standard config plus provider ``claude`` (kind anthropic) and its models."""
    data = base_config(openai_url)
    data["providers"]["claude"] = {
        "kind": "anthropic",
        "base_url": anthropic_url,
        "api_key_env": ANTHROPIC_KEY_ENV,
        "anthropic_beta": ["test-beta-2026-01-01"],
        "timeout_seconds": 5,
        "connect_timeout_seconds": 1,
    }
    data["models"] += [
        claude_model("claude-echo"),
        claude_model("claude-parallel"),
        claude_model("claude-slow"),
        claude_model("claude-streamerror"),
        claude_model("claude-refuse"),
        claude_model("claude-text-only", capabilities=[]),
    ]
    return data


def responses_config(anthropic_url: str, openai_url: str) -> dict:
    """The Anthropic config plus provider ``native``: the OpenAI upstream with its Responses API.

    ``native-echo`` is answered by the test upstream's /v1/responses; every
    other model of provider ``up`` by its chat completions; ``claude-echo`` by
    the Anthropic server; ``script-agent`` (chat) and ``script-native``
    (Responses) play the upstream's ``script``; ``native-sameid`` answers every
    request with the same response id.
    """
    data = anthropic_config(anthropic_url, openai_url)
    data["providers"]["native"] = {
        **data["providers"]["up"],
        "responses_api": True,
        "timeout_seconds": 5,
    }
    data["models"] += [
        _model("native-echo", "medium", 1.0, ("tools", "vision", "json_mode"), provider="native"),
        _model("script-agent", "hard", 1.0, window=400000),
        _model("script-native", "hard", 1.0, window=400000, provider="native"),
        {**_model("native-sameid", "medium", 1.0, provider="native"), "routable": False},
    ]
    return data
