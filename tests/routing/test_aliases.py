"""Client model names (Claude Code's) mapped to registry models or auto by the config's aliases."""

import pytest

from routing.config import ConfigError, validate_config
from tests.support.config import base_config


def config_with(aliases):
    data = base_config("http://127.0.0.1:1/v1")
    data["aliases"] = aliases
    return validate_config(data)


ALIASES = {
    "claude-sonnet-4-5-20250929": "echo-hard",
    "claude-haiku-*": "echo-small",
    "claude-*": "auto",
    "echo-*": "auto",
}


@pytest.mark.parametrize(
    "asked, resolved",
    [
        ("claude-sonnet-4-5-20250929", "echo-hard"),  # exact
        # Claude Code's 1M-context mark: the name without it, exact alias and id alike.
        ("claude-sonnet-4-5-20250929[1m]", "echo-hard"),
        ("echo-medium[1m]", "echo-medium"),
        ("claude-opus-4-8[1m]", "auto"),
        ("claude-haiku-4-5", "echo-small"),  # the first glob that matches
        ("claude-haiku-4-5-20251001", "echo-small"),
        ("claude-opus-4-6", "auto"),
        ("echo-medium", "echo-medium"),  # a registry id is never taken by a glob
        ("auto", "auto"),
        ("gpt-unknown", "gpt-unknown"),  # no alias: as asked (and 404 later)
    ],
)
def test_a_client_name_resolves_exact_first_then_ids_then_globs_in_order(asked, resolved):
    assert config_with(ALIASES).resolve_model_name(asked) == resolved


@pytest.mark.parametrize(
    "aliases, message",
    [
        ({"claude-*": "nope"}, "aliases.claude-*: 'nope' is neither a model id nor 'auto'"),
        ({"echo-small": "echo-hard"}, "aliases.echo-small: a model id cannot be an alias"),
    ],
)
def test_an_alias_to_nothing_or_over_a_model_id_fails_naming_it(aliases, message):
    with pytest.raises(ConfigError) as caught:
        config_with(aliases)
    assert message in str(caught.value)
