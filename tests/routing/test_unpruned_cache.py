"""The unpruned estimate is priced against the cache the bill had, request by request.

Issue 41: against an upstream that reported usage but no cached tokens, the
dashboard read "Net loss with pinch": pinch cut a result sent for the first
time, and the "unpruned" estimate assumed the conversation's earlier part
read from a cache the bill never had (and written at the cache's write
premium), so pinch was charged the difference. Real requests (the official
SDK, real sockets) go through the router to the test upstream's ``cache-*``
model, which reports reads as OpenAI's automatic cache does: none on a
conversation's first request, the repeated prefix on the next.
"""

import openai
import pytest

from routing.models import RouteDecision
from tests.support.scripted_agent import tool_call

pytestmark = pytest.mark.django_db(transaction=True)

PRICE = 10.0  # USD per 1M prompt tokens
CACHED_PRICE = 1.0


@pytest.fixture
def sdk(live_server, api_key, router_config, write_config):
    router_config["models"].append(
        {
            "id": "cache-billed",
            "provider": "up",
            "tier": "hard",
            "context_window": 400000,
            "prompt_price": PRICE,
            "cached_prompt_price": CACHED_PRICE,
            # A cache block: writes would cost 1.25x, were any billed.
            "cache": {"ttl": "5m", "min_tokens": 1024},
        }
    )
    pinch = router_config["pinch"]
    pinch.update(budget_tokens=1000, keep_last_turns=1, keep_last_tool_results=1)
    write_config(router_config)
    return openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)


# A long tool result, then one more tool round: the long one leaves pinch's window.
CONVERSATION = [
    {"role": "user", "content": "Find the failing test in big.log."},
    tool_call("read_file", "c1", path="big.log"),
    {"role": "tool", "tool_call_id": "c1", "content": "log line with some words\n" * 400},
    tool_call("read_file", "c2", path="big.log"),
    {"role": "tool", "tool_call_id": "c2", "content": "ok"},
]


def test_no_cache_billed_means_no_cache_credited_to_the_unpruned_estimate(sdk):
    # The conversation's first request: the long result sent for the first time.
    sdk.chat.completions.create(model="cache-billed", messages=CONVERSATION)

    row = RouteDecision.objects.get()
    assert row.pinch_final_tokens < row.pinch_original_tokens  # pinch cut the long result
    assert not row.cache_read_tokens and not row.cache_write_tokens
    # Unpruned, every token at the prompt price: no reads, no write premium.
    assert row.unpruned_cost_usd == pytest.approx(row.pinch_original_tokens * PRICE / 1e6)
    assert row.unpruned_cost_usd > row.billed_prompt_cost_usd  # a saving, not a loss


def test_cache_reads_the_provider_billed_are_credited_to_the_unpruned_estimate(sdk):
    sdk.chat.completions.create(model="cache-billed", messages=CONVERSATION[:3])
    sdk.chat.completions.create(model="cache-billed", messages=CONVERSATION)

    row = RouteDecision.objects.order_by("id").last()
    assert row.pinch_final_tokens < row.pinch_original_tokens
    assert row.cache_read_tokens > 0
    # The earlier part of the conversation read from the cache, as the bill was.
    full = row.pinch_original_tokens * PRICE / 1e6
    assert row.unpruned_cost_usd < full
