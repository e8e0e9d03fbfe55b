"""The config file is strictly validated: a bad key or value fails naming the key."""

import copy
import typing

import pytest
import yaml

from routing.config import DEFAULT_CONFIG_PATH, ConfigError, ProviderConfig, validate_config
from routing.config.cache import KIND_CACHE
from routing.config.source import read_config_file
from routing.pruning import payback_knobs
from tests.support.config import base_config


def shipped():
    return read_config_file(DEFAULT_CONFIG_PATH)


def test_shipped_default_config_is_valid_and_has_the_measured_pinch_defaults():
    config = validate_config(shipped())
    pinch = config.pinch
    assert (pinch.enabled, pinch.budget_tokens, pinch.keep_last_turns) == (True, 6000, 4)
    assert (pinch.max_summarize_chars, pinch.protected_max_chars) == (4000, 20000)
    assert pinch.keep_last_tool_results == 4
    assert pinch.prefix_probe is True
    assert (pinch.relevance.enabled, pinch.relevance.backend) == (False, "builtin")
    assert (pinch.relevance.timeout_seconds, pinch.relevance.min_candidates) == (10, 2)
    payback = pinch.payback
    assert (payback.enabled, payback.turns_ahead, payback.min_payback) == (True, 0.75, 4.0)
    assert (payback.keep_min_shared, payback.keep_max_chars) == (3, 0)
    assert (payback.names_max_chars, payback.names_share, payback.lines_max_chars) == (
        250,
        0.04,
        200,
    )
    assert (payback.max_loss_share, payback.settle_turns) == (0.1, 12)
    # Every knob of the pure core is read from the config (it has no defaults of its own).
    knobs = payback_knobs(pinch)
    assert (knobs.budget_tokens, knobs.keep_last_tool_results, knobs.max_loss_share) == (
        6000,
        4,
        0.1,
    )


def test_the_cache_prices_pinch_decides_by_are_the_ones_the_router_bills_by():
    config = validate_config(shipped())
    # gpt-4.1: cached 0.50 of 2.00 -> reads at 0.25; no cache block: no write premium.
    prices = config.cache_prices(config.model("gpt-4.1"))
    assert (prices.read_multiplier, prices.write_multiplier) == (0.25, 1.0)
    assert (prices.min_cacheable_tokens, prices.automatic) == (1024, True)
    # No cached price: the provider kind's default read.
    local = config.cache_prices(config.model("qwen-small"))
    assert (local.read_multiplier, local.write_multiplier) == (0.5, 1.0)


@pytest.mark.parametrize(
    ("kind", "cache", "expected"),
    [
        ("anthropic", {"ttl": "5m", "min_tokens": 2048}, (0.1, 1.25, 2048, False)),
        ("anthropic", {"ttl": "1h"}, (0.1, 2.0, 1024, False)),
        ("openai", {"ttl": "5m"}, (0.1, 1.25, 1024, True)),
        ("openai", None, (0.1, 1.0, 1024, True)),
    ],
)
def test_a_models_cache_block_and_provider_kind_set_its_cache_prices(kind, cache, expected):
    data = base_config("http://127.0.0.1:1/v1")
    data["providers"]["up"]["kind"] = kind
    model = data["models"][0]
    model["prompt_price"], model["cached_prompt_price"] = 3.0, 0.3
    if cache is not None:
        model["cache"] = cache
    config = validate_config(data)
    prices = config.cache_prices(config.models[0])
    assert (
        prices.read_multiplier,
        prices.write_multiplier,
        prices.min_cacheable_tokens,
        prices.automatic,
    ) == pytest.approx(expected)


def with_change(path, value):
    data = copy.deepcopy(base_config("http://127.0.0.1:1/v1"))
    node = data
    *parents, last = path
    for part in parents:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    node[last] = value
    return data


@pytest.mark.parametrize(
    "path, value, named",
    [
        (("pinch", "budget_tokens"), 0, "pinch.budget_tokens"),
        (("pinch", "keep_last_turns"), 0, "pinch.keep_last_turns"),
        (("pinch", "keep_last_tool_results"), 0, "pinch.keep_last_tool_results"),
        (("pinch", "window_step"), 0, "pinch.window_step"),
        (("pinch", "window_step"), -4, "pinch.window_step"),
        (("pinch", "window_step"), "eight", "pinch.window_step"),
        (("pinch", "max_summarize_chars"), 2999, "pinch.max_summarize_chars"),
        (("pinch", "protected_max_chars"), 2999, "pinch.protected_max_chars"),
        (("pinch", "relevance", "timeout_seconds"), 0, "pinch.relevance.timeout_seconds"),
        (("pinch", "relevance", "min_candidates"), 0, "pinch.relevance.min_candidates"),
        (("pinch", "relevance", "backend"), "magic", "pinch.relevance.backend"),
        (("pinch", "relevance", "max_chars"), 0, "pinch.relevance.max_chars"),
        (("pinch", "surprise"), 1, "pinch.surprise: unknown key"),
        (("pinch", "payback", "turns_ahead"), 0, "pinch.payback.turns_ahead"),
        (("pinch", "payback", "min_payback"), -1, "pinch.payback.min_payback"),
        (("pinch", "payback", "keep_min_shared"), 0, "pinch.payback.keep_min_shared"),
        (("pinch", "payback", "keep_max_chars"), -1, "pinch.payback.keep_max_chars"),
        (("pinch", "payback", "surprise"), 1, "pinch.payback.surprise: unknown key"),
        (("models", 0, "cache"), {"ttl": "2h"}, "models.0.cache.ttl"),
        (("models", 0, "cache"), {"min_tokens": 0}, "models.0.cache.min_tokens"),
        (("pinch", "relevance", "modle"), "x", "pinch.relevance.modle: unknown key"),
        (("objective", "assumed_cache_rate"), 1.5, "objective.assumed_cache_rate"),
        (("objective", "billing_reset_day"), 32, "objective.billing_reset_day"),
        (("routing", "default_tier"), "legendary", "default_tier"),
        (("providers", "up", "base_url"), "ftp://x", "providers.up.base_url"),
        (("providers", "up", "api_key_env"), "sk-live abc", "providers.up.api_key_env"),
        (("providers", "up", "timeout_seconds"), -1, "providers.up.timeout_seconds"),
        (("providers", "up", "extra"), 1, "providers.up.extra: unknown key"),
        (("models", 0, "provider"), "nowhere", "models.0.provider"),
        (("models", 0, "tier"), "legendary", "models.0.tier"),
        (("models", 0, "context_window"), 0, "models.0.context_window"),
        (("models", 0, "capabilities"), ["telepathy"], "models.0.capabilities"),
        (("classifier", "backend"), "llm", "llm"),
        (("toplevel_typo",), 1, "toplevel_typo: unknown key"),
    ],
)
def test_bad_value_fails_naming_the_key(path, value, named):
    with pytest.raises(ConfigError) as caught:
        validate_config(with_change(path, value))
    assert named in str(caught.value)


def test_window_step_defaults_to_the_measured_step_and_null_turns_it_off():
    unset = base_config("http://127.0.0.1:1/v1")
    del unset["pinch"]["window_step"]
    assert validate_config(unset).pinch.window_step == 8
    assert validate_config(with_change(("pinch", "window_step"), None)).pinch.window_step is None
    assert validate_config(with_change(("pinch", "window_step"), 1)).pinch.window_step == 1
    assert validate_config(shipped()).pinch.window_step == 8


def test_protected_max_chars_null_disables_the_cap():
    assert (
        validate_config(
            with_change(("pinch", "protected_max_chars"), None)
        ).pinch.protected_max_chars
        is None
    )


def test_duplicate_model_ids_are_refused():
    data = base_config("http://127.0.0.1:1/v1")
    data["models"].append(dict(data["models"][0]))
    with pytest.raises(ConfigError, match="duplicate model id"):
        validate_config(data)


def test_unreadable_or_broken_yaml_names_the_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        read_config_file(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("pinch: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        read_config_file(broken)


def test_cached_price_defaults_to_prompt_price():
    data = base_config("http://127.0.0.1:1/v1")
    data["models"][0]["cached_prompt_price"] = None
    model = validate_config(data).models[0]
    assert model.cached_prompt_price is None
    from routing.pricing import blended_prompt_price

    assert blended_prompt_price(model, 0.7) == pytest.approx(model.prompt_price)


def test_file_changes_are_picked_up_without_restart(db, write_config):
    from routing.config.store import current_config

    data = base_config("http://127.0.0.1:1/v1")
    path = write_config(data)
    assert current_config().pinch.budget_tokens == 50000
    data["pinch"]["budget_tokens"] = 1234
    path.write_text(yaml.safe_dump(data))
    import os

    os.utime(path, ns=(1, 1))  # a different mtime, whatever the clock's resolution
    assert current_config().pinch.budget_tokens == 1234


def test_admin_overrides_apply_on_top_and_bad_ones_save_nothing(db, write_config):
    from routing.config.store import current_config, set_overrides
    from routing.models import ConfigOverride

    write_config(base_config("http://127.0.0.1:1/v1"))
    set_overrides({"pinch.enabled": False})
    assert current_config().pinch.enabled is False
    with pytest.raises(ConfigError, match="pinch.budget_tokens"):
        set_overrides({"pinch.budget_tokens": -5, "pinch.prefix_probe": False})
    assert dict(ConfigOverride.objects.values_list("key", "value")) == {"pinch.enabled": False}
    set_overrides({}, removals=["pinch.enabled"])
    assert current_config().pinch.enabled is True


def test_manage_py_check_names_the_bad_key_of_the_config_file(write_config):
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    data = base_config("http://127.0.0.1:1/v1")
    data["pinch"]["budget_tokens"] = 0
    write_config(data)
    with pytest.raises(SystemCheckError, match="pinch.budget_tokens"):
        call_command("check")


def test_the_wsgi_app_refuses_to_load_a_broken_config(tmp_path):
    import os
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_text("pinch:\n  surprise: 1\n")
    env = {**os.environ, "ROUTER_CONFIG": str(bad), "ROUTER_DATA_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", "import router_project.wsgi"],
        env=env,
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    )
    assert result.returncode != 0
    assert "pinch.surprise: unknown key" in result.stderr


@pytest.mark.parametrize("kind", typing.get_args(ProviderConfig.model_fields["kind"].annotation))
def test_every_provider_kind_prices_its_cache_without_a_cache_block(kind):
    data = base_config("http://127.0.0.1:9/v1")
    data["providers"]["up"]["kind"] = kind
    config = validate_config(data)
    model = next(m for m in config.models if m.provider == "up" and m.cache is None)
    # A model that says nothing of its cache gets its provider kind's defaults.
    prices = config.cache_prices(model)
    assert prices.lifetime_seconds == KIND_CACHE[kind].lifetime_seconds
    assert prices.automatic == KIND_CACHE[kind].automatic
