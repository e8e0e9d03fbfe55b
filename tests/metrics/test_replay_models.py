"""pinch_replay --model: a model of the config at its prices, a well-known one at list prices."""

from io import StringIO

import pytest
import yaml
from django.core.management import CommandError, call_command

from metrics.replay import cli_overrides, replay_config
from routing.replay.corpus import load_sessions
from routing.replay.price_list import PRICE_LIST, with_listed_model
from routing.replay.sessions import replay

pytestmark = pytest.mark.django_db

FILES = ("020.json", "023.json")
LIST = yaml.safe_load(PRICE_LIST.read_text())


@pytest.fixture
def paths(corpus_dir):
    return [str(corpus_dir / name) for name in FILES]


def _verdict(*options):
    stdout = StringIO()
    call_command("pinch_replay", *options, stdout=stdout, stderr=StringIO())
    return stdout.getvalue().splitlines()


def test_a_model_the_config_lacks_is_replayed_at_its_list_prices(default_config, paths):
    assert default_config.model("claude-sonnet-4-5") is None

    lines = _verdict(*paths, "--model", "claude-sonnet-4-5")

    assert (
        f"at claude-sonnet-4-5's list prices (the built-in price list of {LIST['date']})"
        in (lines[0])
    )
    assert lines[2].startswith("cost: each request at claude-sonnet-4-5's list prices")
    assert "claude-sonnet-4-5 $3/1M, cache reads $0.3, writes x1.25" in lines[2]


def test_every_request_is_billed_at_the_listed_reads_and_writes(default_config, paths):
    listed = LIST["models"]["claude-sonnet-4-5"]
    config, _ = with_listed_model(replay_config(cli_overrides()), "claude-sonnet-4-5")

    result = replay(load_sessions(paths), config, model="claude-sonnet-4-5")

    write = listed["prompt"] * listed["cache_write"]
    for record in result.records:
        assert record.model == "claude-sonnet-4-5"
        read = record.cached_tokens + record.recall_cached_tokens
        written = record.uncached_tokens + record.recall_uncached_tokens
        expected = (read * listed["cached"] + written * write) / 1e6
        assert record.configured_cost_usd == pytest.approx(expected)


def test_the_configs_own_model_wins_over_the_list(write_default_config, paths):
    config = write_default_config()
    # gpt-4.1 is on the list at $2; this config prices it at $7.
    models = [m.model_dump() for m in config.models]
    for model in models:
        if model["id"] == "gpt-4.1":
            model.update(prompt_price=7.0, cached_prompt_price=1.0)
    write_default_config({"models": models})

    lines = _verdict(*paths, "--model", "gpt-4.1")

    assert "at gpt-4.1's prices in the config" in lines[0]
    assert "gpt-4.1 $7/1M, cache reads $1" in lines[2]


def test_a_name_neither_knows_is_refused_with_the_names_of_both(default_config, paths):
    with pytest.raises(CommandError) as error:
        _verdict(*paths, "--model", "gpt-99")

    message = str(error.value)
    assert "unknown model 'gpt-99'" in message
    assert "gpt-4.1-mini" in message.split("; or")[0]  # the config's
    assert "claude-sonnet-4-5" in message.split("; or")[1]  # the list's
