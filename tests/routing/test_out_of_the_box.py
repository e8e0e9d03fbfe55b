"""The shipped config, as a new user runs it: every agent's default model name answers.

The shipped file is used as it is, except that its local Ollama provider is
the OpenAI-compatible test upstream (its small model an echo model) and
OPENAI_API_KEY is unset, as on a fresh machine with Ollama running. The
names are what each agent sends when the user sets nothing: Claude Code's
main model (with its ``[1m]`` context mark or without) and its small model,
Codex CLI's (docs/claude-code.md and the README's agent sections list them).
"""

import logging
import os

import anthropic
import openai
import pytest
import yaml

from routing.config import DEFAULT_CONFIG_PATH, RouterConfig
from routing.config.keys import unset_key_warnings
from routing.config.source import ConfigSource
from routing.models import RouteDecision
from routing.selection import candidates_for
from tests.support.real_clients import readme_block

pytestmark = pytest.mark.django_db(transaction=True)

HI = [{"role": "user", "content": "hi"}]

CLAUDE_CODE_NAMES = [
    "claude-opus-4-8[1m]",
    "claude-opus-4-8",
    "claude-sonnet-4-6",
    "claude-sonnet-4-6[1m]",
    "claude-opus-4-6",
    "claude-haiku-4-5-20251001",
]
# 0.171's default (as it asks with no model set), and earlier ones.
CODEX_NAMES = ["gpt-6.2-sol", "gpt-5.5", "gpt-5.1-codex", "codex-mini-latest"]


def shipped_data(upstream_url: str) -> dict:
    data = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text())
    data["providers"]["local"]["base_url"] = upstream_url
    data["models"][0]["upstream_model"] = "echo-small"
    return data


@pytest.fixture
def shipped(upstream, write_config, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = shipped_data(upstream.base_url)
    write_config(data)
    return data


@pytest.fixture
def claude(live_server, shipped, api_key):
    return anthropic.Anthropic(base_url=live_server.url, api_key=api_key, max_retries=0)


@pytest.fixture
def sdk(live_server, shipped, api_key):
    return openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)


@pytest.mark.parametrize("name", CLAUDE_CODE_NAMES)
def test_claude_codes_default_model_names_answer_on_the_shipped_config(claude, name):
    reply = claude.messages.create(model=name, max_tokens=50, messages=HI)

    assert reply.content[0].text
    assert reply.model == name  # Claude Code sizes its context display from it
    row = RouteDecision.objects.get()
    assert (row.requested_model, row.path, row.chosen_model) == (name, "routed", "qwen-small")


@pytest.mark.parametrize("name", CODEX_NAMES)
def test_codex_default_model_names_answer_on_the_shipped_config(sdk, name):
    reply = sdk.responses.create(model=name, input="hi", store=False)

    assert reply.output_text
    row = RouteDecision.objects.get()
    assert (row.requested_model, row.path, row.chosen_model) == (name, "routed", "qwen-small")


def test_a_model_id_is_served_as_named_not_taken_by_a_glob(default_config):
    # gpt-4.1 matches the gpt-* glob, but a model id comes first.
    assert default_config.resolve_model_name("gpt-4.1") == "gpt-4.1"
    assert default_config.resolve_model_name("gpt-4.1-mini[1m]") == "gpt-4.1-mini"
    assert default_config.resolve_model_name("llama3") == "llama3"


def test_the_model_list_offers_only_what_can_answer_and_names_the_aliases(sdk, monkeypatch):
    listed = {m.id: m for m in sdk.models.list()}

    # OPENAI_API_KEY is unset: OpenAI's models would fail, so they are not offered.
    assert set(listed) == {"auto", "qwen-small", "demo"}
    assert sorted(listed["auto"].aliases) == ["claude-*", "codex-*", "gpt-*"]
    assert listed["qwen-small"].aliases == []

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert {"gpt-4.1", "gpt-4.1-mini"} <= {m.id for m in sdk.models.list()}


def test_an_alias_is_retrieved_as_the_model_it_stands_for(sdk):
    found = sdk.models.retrieve("claude-opus-4-8[1m]")

    assert found.id == "claude-opus-4-8[1m]"
    assert found.alias_of == "auto"


def test_retrieving_a_model_without_its_provider_key_is_final_and_names_the_variable(sdk):
    with pytest.raises(openai.APIStatusError) as caught:
        sdk.models.retrieve("gpt-4.1")

    assert caught.value.status_code == 400
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert caught.value.code == "provider_key_missing"
    assert "OPENAI_API_KEY, which is not set" in caught.value.message


@pytest.mark.parametrize(
    "asked, suggested",
    [
        ("gtp-4.1", "'gpt-4.1'"),
        ("qwen-smal", "'qwen-small'"),
        ("atuo", "'auto'"),
        # A name the claude-* and gpt-* aliases would serve, spelled right.
        ("clade-opus-4-8", "'claude-opus-4-8'"),
        ("cluade-sonnet-4-6[1m]", "'claude-sonnet-4-6[1m]'"),
        ("gpy-6.2-sol", "'gpt-6.2-sol'"),
    ],
)
def test_a_mistyped_model_name_gets_a_did_you_mean(sdk, asked, suggested):
    with pytest.raises(openai.NotFoundError) as caught:
        sdk.chat.completions.create(model=asked, messages=HI)

    assert f"Did you mean {suggested}" in caught.value.message
    assert caught.value.response.headers["x-should-retry"] == "false"


def test_a_name_like_nothing_gets_no_guess(sdk):
    with pytest.raises(openai.NotFoundError) as caught:
        sdk.chat.completions.create(model="llama3", messages=HI)

    assert "Did you mean" not in caught.value.message
    assert "Use 'auto' or one of: qwen-small, gpt-4.1-mini" in caught.value.message


def test_a_config_file_changed_while_running_warns_about_an_unset_provider_key(
    tmp_path, monkeypatch, caplog
):
    monkeypatch.delenv("ROUTER_TEST_UNSET_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = shipped_data("http://127.0.0.1:9/v1")
    path = tmp_path / "router.yaml"
    path.write_text(yaml.safe_dump(data))
    source = ConfigSource(path)
    with caplog.at_level(logging.WARNING, logger="routing.config.source"):
        source.effective({}, [])  # the first read: start-up's report covers it
        data["providers"]["added"] = {
            "kind": "openai",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key_env": "ROUTER_TEST_UNSET_KEY",
        }
        data["models"].append(
            {"id": "added-model", "provider": "added", "tier": "easy", "context_window": 8000}
        )
        path.write_text(yaml.safe_dump(data))
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        source.effective({}, [])
        source.effective({"pinch.budget_tokens": 7000}, [])  # once per re-read, not per request

    # Each unset key once, in start-up's words: OpenAI's and the added provider's.
    expected = unset_key_warnings(source.effective({}, []))
    assert len(expected) == 2
    assert [r.getMessage() for r in caplog.records] == [
        f"config_reloaded {path}: {text}" for text in expected
    ]
    assert (
        "provider 'added': the environment variable ROUTER_TEST_UNSET_KEY is not set, so "
        "its models (added-model) are skipped"
    ) in caplog.text


def readme_config() -> RouterConfig:
    """The config a user copies from the README first."""
    return RouterConfig.model_validate(yaml.safe_load(readme_block("Configure it", "yaml")))


def test_the_readmes_first_config_sends_every_agents_default_name_to_auto():
    config = readme_config()  # its aliases keep the agents' own names

    for name in [*CLAUDE_CODE_NAMES, *CODEX_NAMES]:
        assert config.resolve_model_name(name) == "auto", name


@pytest.mark.parametrize("tier", ["easy", "medium", "hard"])
def test_the_readmes_first_config_has_a_model_for_claude_codes_requests_at_every_tier(tier):
    # Claude Code's first request: ~26,000 prompt tokens, 64,000 asked for the answer
    # (bench/check_final_errors.py's readme-config scenario runs the real one through it).
    chosen = candidates_for(readme_config(), tier, 26_000, 64_000, {"tools"})

    assert chosen and chosen[0].context_window >= 90_000
