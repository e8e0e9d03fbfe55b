"""Classification and model choice, without HTTP."""

import pytest

from routing.classifier import classify, heuristic_tier
from routing.config import validate_config
from routing.errors import RouterError
from routing.selection import candidates_for
from tests.support.config import base_config


@pytest.fixture
def config():
    return validate_config(base_config("http://127.0.0.1:1/v1"))


def user(text):
    return [{"role": "user", "content": text}]


@pytest.mark.parametrize(
    "messages, tools, tier",
    [
        (user("what time zone is Lisbon in?"), None, "easy"),
        (user("x" * 500), None, "medium"),
        (user("why does this fail?\n```py\nprint(1/0)\n```"), None, "medium"),
        # Tool definitions are the agent's, the same for any task: they do not count.
        (user("read the file"), [{"type": "function", "function": {"name": "f"}}], "easy"),
        (user("please refactor the module " + "x" * 500), None, "hard"),
        (user("debug the flaky login test"), None, "medium"),
        (user("refactor the scheduler to remove the race condition"), None, "hard"),
        (user("x" * 5000), None, "hard"),
        (user("y " * 200_000), None, "hard"),
    ],
)
def test_heuristic_tier_follows_the_size_and_shape_of_the_request(config, messages, tools, tier):
    assert heuristic_tier(messages, tools, config) == tier


def test_a_turn_asked_again_gets_its_tier_and_a_changed_turn_its_own(config):
    # The turn's signs are remembered (routing/classifier.py): asked again, in another
    # conversation, or after a different turn, each turn is classified as it reads.
    turns = [
        ("refactor the scheduler to remove the race condition", "hard"),
        ("what time zone is Lisbon in?", "easy"),
        ("debug the flaky login test", "medium"),
        ("refactor the scheduler to remove the race condition", "hard"),
        ("why does this fail?\n```py\nprint(1/0)\n```", "medium"),
        ("what time zone is Lisbon in?", "easy"),
    ]
    for text, tier in turns:
        assert heuristic_tier(user(text), None, config) == tier, text
    conversation = [*user("x " * 13_000), {"role": "assistant", "content": "ok"}]
    assert heuristic_tier([*conversation, *user("debug the flaky login test")], None, config) == (
        "hard"  # the same turn, but the user has typed a lot over the conversation
    )


def test_heuristic_maps_onto_two_configured_tiers():
    data = base_config("http://127.0.0.1:1/v1")
    data["routing"] = {"tiers": ["cheap", "strong"], "default_tier": "cheap"}
    for model in data["models"]:
        model["tier"] = "cheap" if model["tier"] == "easy" else "strong"
    config = validate_config(data)
    assert heuristic_tier(user("hi"), None, config) == "cheap"
    assert heuristic_tier(user("x" * 5000), None, config) == "strong"


def test_llm_classifier_falls_back_to_the_heuristic_when_its_provider_is_down():
    data = base_config("http://127.0.0.1:1/v1")
    data["classifier"] = {"backend": "llm", "llm": {"model": "unreachable", "timeout_seconds": 1}}
    result = classify(user("hi"), None, validate_config(data))
    assert (result.tier, result.outcome) == ("easy", "llm_fallback")


def test_cheapest_model_of_the_tier_comes_first_then_the_tiers_above(config):
    ids = [m.id for m in candidates_for(config, "medium", 100, 0, set())]
    assert ids[0] == "text-only"
    assert ids.index("echo-medium") < ids.index("echo-medium-pricey") < ids.index("echo-hard")
    assert "echo-small" not in ids


def test_blended_price_with_cache_rate_decides_the_order():
    data = base_config("http://127.0.0.1:1/v1")
    data["models"] = [
        {
            "id": "a",
            "provider": "up",
            "tier": "easy",
            "context_window": 1000,
            "prompt_price": 1.0,
            "cached_prompt_price": 0.9,
        },
        {
            "id": "b",
            "provider": "up",
            "tier": "easy",
            "context_window": 1000,
            "prompt_price": 1.2,
            "cached_prompt_price": 0.1,
        },
    ]
    no_cache = validate_config(data)
    assert [m.id for m in candidates_for(no_cache, "easy", 10, 0, set())] == ["a", "b"]
    data["objective"] = {"assumed_cache_rate": 0.8}
    cached = validate_config(data)
    assert [m.id for m in candidates_for(cached, "easy", 10, 0, set())] == ["b", "a"]


def test_a_model_whose_window_is_too_small_is_skipped_for_the_next_tier(config):
    ids = [m.id for m in candidates_for(config, "easy", 40000, 0, set())]
    assert ids == ["echo-hard"]


def test_requested_max_tokens_counts_toward_the_window(config):
    assert candidates_for(config, "easy", 30000, 0, set())[0].id == "echo-small"
    assert candidates_for(config, "easy", 30000, 4000, set())[0].id == "echo-hard"


def test_needed_capabilities_filter_the_candidates(config):
    ids = [m.id for m in candidates_for(config, "easy", 10, 0, {"vision"})]
    assert ids[0] == "echo-medium"
    assert "text-only" not in ids


def test_nothing_fits_is_a_400_that_says_the_measured_size(config):
    with pytest.raises(RouterError) as caught:
        candidates_for(config, "easy", 10_000_000, 0, set())
    assert caught.value.status == 400
    assert "10000000" in caught.value.message
