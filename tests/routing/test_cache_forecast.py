"""Predicted against billed: the router's cache estimate beside the provider's usage, per decision.

Table-driven for the estimate and the verdict; end to end (official SDKs,
real sockets) against the Anthropic test upstream, which keeps a prompt
cache by the documented rules and answers cache diagnostics, and the OpenAI
one's ``cache-*`` models, which report ``cached_tokens`` as OpenAI's
automatic cache does. A cache the provider dropped while the router thought
it warm is a ``miss``; one the router thought cold and the provider read is
a ``hit``; the provider's own reason for a miss is recorded.
"""

import json
import time

import anthropic
import pytest

from pinch.steps import CacheModel
from routing.cache_forecast import HIT, MISS, predicted_split, surprise
from routing.models import RouteDecision
from tests.support.router import openai_client

CACHE = CacheModel(min_cacheable_tokens=100)
MESSAGES = [{"role": "user", "content": "u" * 300}, {"role": "assistant", "content": "a" * 300}]


@pytest.mark.parametrize(
    ("prefix", "cold", "writes", "split"),
    [
        (None, False, True, None),  # the probe did not run: no estimate
        ((0, 0, 2), False, True, (0, 210, 0)),  # first request: all written
        ((0, 0, 2), False, False, (0, 0, 210)),  # no write premium: plain input
        ((1, 2, 2), False, True, (110, 100, 0)),  # the first message (and the tools) read
        ((2, 2, 2), None, False, (210, 0, 0)),  # gap unknown: warm
        ((2, 2, 2), True, True, (0, 210, 0)),  # a cold gap: nothing read
    ],
)
def test_the_estimate_reads_the_repeated_prefix_while_the_cache_is_warm(
    prefix, cold, writes, split
):
    assert predicted_split(MESSAGES, prefix, 10, CACHE, cold, writes) == split


def test_a_prompt_under_the_cacheable_minimum_is_predicted_uncached():
    small = CacheModel(min_cacheable_tokens=1024)
    assert predicted_split(MESSAGES, (2, 2, 2), 10, small, False, True) == (0, 0, 210)


@pytest.mark.parametrize(
    ("predicted_read", "predicted_total", "billed_read", "billed_prompt", "verdict"),
    [
        (900, 1000, 880, 1100, ""),  # as predicted (token counts differ, shares agree)
        (900, 1000, 0, 1100, MISS),  # predicted warm, billed as written
        (900, 1000, 300, 1100, MISS),  # less than half the predicted share read
        (900, 1000, 500, 1100, ""),  # half of it or more: not a surprise
        (0, 1000, 0, 1100, ""),  # predicted cold, billed cold
        (0, 1000, 700, 1100, HIT),  # predicted cold, billed as read
        (None, 1000, 700, 1100, ""),  # no estimate
        (900, 1000, None, 1100, ""),  # the provider reports no cache figures
        (900, 1000, 0, 0, ""),  # no usage
    ],
)
def test_a_surprise_is_a_disagreement_on_the_share_read(
    predicted_read, predicted_total, billed_read, billed_prompt, verdict
):
    assert surprise(predicted_read, predicted_total, billed_read, billed_prompt) == verdict


# --- End to end ---

pytestmark_db = pytest.mark.django_db(transaction=True)
SYSTEM = "You are a careful coding agent. Follow the repository's conventions. " * 60


def turns(rounds):
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Fix it."}]
    for i in range(rounds):
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": f"cat f{i}"})},
        }
        messages.append({"role": "assistant", "content": f"step {i}", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": f"{i} " * 400})
        yield list(messages)


def rows():
    return list(RouteDecision.objects.order_by("id"))


@pytestmark_db
def test_a_warm_anthropic_cache_is_predicted_and_billed_alike(
    live_server, api_key, claude_config, anthropic_upstream
):
    sdk = openai_client(live_server, api_key)
    for messages in turns(4):
        sdk.chat.completions.create(model="claude-echo", messages=messages)
    decisions = rows()
    assert decisions[0].predicted_cache_read_tokens == 0
    for row in decisions[1:]:
        assert row.predicted_cache_read_tokens > 0 and row.cache_read_tokens > 0
        assert row.predicted_cache_write_tokens > 0  # a cache block: the rest is written
        assert row.cache_surprise == "" and row.cache_cold is False
    assert all(row.cache_surprise == "" for row in decisions)


@pytestmark_db
def test_a_cache_the_provider_dropped_is_a_miss(
    live_server, api_key, claude_config, anthropic_upstream
):
    sdk = openai_client(live_server, api_key)
    requests = list(turns(3))
    sdk.chat.completions.create(model="claude-echo", messages=requests[0])
    sdk.chat.completions.create(model="claude-echo", messages=requests[1])
    anthropic_upstream.cache.clear()  # evicted, as an expired TTL or a switched replica does
    sdk.chat.completions.create(model="claude-echo", messages=requests[2])
    last = rows()[-1]
    assert last.predicted_cache_read_tokens > 0 and last.cache_read_tokens == 0
    assert last.cache_surprise == MISS


@pytestmark_db
def test_a_cache_predicted_cold_that_the_provider_read_is_an_unexpected_hit(
    live_server, api_key, claude_config, anthropic_upstream, write_config
):
    # A lifetime shorter than the pause: the router plans the next request cold.
    for model in claude_config["models"]:
        if model["id"] == "claude-echo":
            model["cache_lifetime_seconds"] = 1
    write_config(claude_config)
    sdk = openai_client(live_server, api_key)
    requests = list(turns(2))
    sdk.chat.completions.create(model="claude-echo", messages=requests[0])
    time.sleep(1.2)
    sdk.chat.completions.create(model="claude-echo", messages=requests[1])
    last = rows()[-1]
    assert last.cache_cold is True and last.predicted_cache_read_tokens == 0
    assert last.cache_read_tokens > 0 and last.cache_surprise == HIT


@pytestmark_db
def test_the_providers_reason_for_a_miss_is_recorded(
    live_server, api_key, claude_config, anthropic_upstream
):
    claude = anthropic.Anthropic(base_url=live_server.url, api_key=api_key, max_retries=0)
    history = [{"role": "user", "content": "Fix it. " * 300}]
    first = claude.messages.create(
        model="claude-echo",
        max_tokens=50,
        system=SYSTEM,
        messages=history,
        extra_body={"diagnostics": {"previous_message_id": None}},
    )
    # The client rewrites its first message's answer: the provider says so.
    edited = [
        *history,
        {"role": "assistant", "content": "edited"},
        {"role": "user", "content": "go"},
    ]
    claude.messages.create(
        model="claude-echo",
        max_tokens=50,
        system=SYSTEM,
        messages=[{"role": "user", "content": "Other. " * 300}, *edited[1:]],
        extra_body={"diagnostics": {"previous_message_id": first.id}},
    )
    first_row, second_row = rows()
    assert first_row.cache_miss_reason == ""
    assert second_row.cache_miss_reason == "messages_changed"


@pytestmark_db
def test_openai_cached_tokens_are_compared_with_the_estimate(
    live_server, api_key, router_config, write_config, upstream
):
    router_config["models"].append(
        {
            "id": "cache-hard",
            "provider": "up",
            "tier": "hard",
            "context_window": 400000,
            "prompt_price": 10.0,
            "cached_prompt_price": 1.0,
            "capabilities": ["tools"],
        }
    )
    write_config(router_config)
    sdk = openai_client(live_server, api_key)
    requests = list(turns(3))
    sdk.chat.completions.create(model="cache-hard", messages=requests[0])
    sdk.chat.completions.create(model="cache-hard", messages=requests[1])
    # Another conversation in between: the test upstream keeps one prefix only.
    sdk.chat.completions.create(
        model="cache-hard", messages=[{"role": "user", "content": "x" * 4000}]
    )
    sdk.chat.completions.create(model="cache-hard", messages=requests[2])
    warm, missed = rows()[1], rows()[3]
    assert warm.predicted_cache_read_tokens > 0 and warm.cache_read_tokens > 0
    assert warm.predicted_cache_write_tokens == 0 and warm.cache_surprise == ""
    assert missed.predicted_cache_read_tokens > 0 and missed.cache_read_tokens == 0
    assert missed.cache_surprise == MISS
