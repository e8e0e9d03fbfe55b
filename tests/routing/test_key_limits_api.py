"""A key over its budget or its rate limits, through the official SDKs over real HTTP.

Each refusal must look like the real provider's to the SDK that gets it
(routing/limits/refusals.py cites what OpenAI and Anthropic send), reach no
upstream and leave no decision row; and the SDKs must then do what they do
against the real providers: the openai SDK waits out a rate limit as
Retry-After says, and stops at a spent budget (on chat completions a 400,
which opencode's AI SDK takes as final, where it retries a 429 without end;
on the Responses API a 400 too, whose body Codex shows as sent, where for OpenAI's 429
``insufficient_quota`` it shows its own "Quota exceeded"; both with ``x-should-retry:
false`` and type and code ``insufficient_quota``: routing.errors.AGENT_RETRIED_FINALS);
the anthropic SDK stops at a spent budget (400) and waits out a rate limit.
"""

import anthropic
import openai
import pytest

from routing.auth import create_api_key
from routing.limits.admission import WARNING_HEADER, rate_buckets
from routing.models import ApiKey, LimitRefusal, RouteDecision
from tests.support.decisions import decision, seed

pytestmark = pytest.mark.django_db(transaction=True)

HELLO = [{"role": "user", "content": "hello"}]


def limited_key(**limits) -> tuple[ApiKey, str]:
    return create_api_key("team-a", limits=limits)


def spend(key: ApiKey, usd: float) -> None:
    """Decisions of ``key`` this period, costing ``usd`` (as estimated: no usage came)."""
    seed(decision(api_key=key, chosen_model="echo-medium", estimated_cost_usd=usd))


def refusals(key: ApiKey, reason: str) -> int:
    row = LimitRefusal.objects.filter(api_key=key, reason=reason).first()
    return row.count if row else 0


def openai_sdk(live_server, raw, retries=0):
    return openai.OpenAI(
        base_url=live_server.url + "/v1", api_key=raw, max_retries=retries, timeout=20
    )


def anthropic_sdk(live_server, raw, retries=0):
    return anthropic.Anthropic(
        base_url=live_server.url, api_key=raw, max_retries=retries, timeout=20
    )


def test_a_spent_budget_is_a_final_insufficient_quota_on_chat_and_reaches_no_upstream(
    live_server, router_config, upstream
):
    key, raw = limited_key(budget_usd=1.0, budget_period="day")
    spend(key, 1.25)
    with pytest.raises(openai.BadRequestError) as caught:
        openai_sdk(live_server, raw).chat.completions.create(model="auto", messages=HELLO)
    error = caught.value
    # A 400, not OpenAI's 429: opencode's AI SDK retries every 429 without end.
    assert error.status_code == 400
    assert error.body["type"] == "insufficient_quota"
    assert error.body["code"] == "insufficient_quota"
    assert "'team-a' has reached its daily budget of $1.00 (spent $1.25)" in error.message
    assert "You will regain access on" in error.message and "UTC" in error.message
    assert "retry-after" not in error.response.headers
    assert upstream.received == []
    assert RouteDecision.objects.count() == 1  # the seeded one: the refusal wrote none
    assert refusals(key, "budget") == 1


def test_the_openai_sdk_does_not_retry_a_spent_budget(live_server, router_config, upstream):
    key, raw = limited_key(budget_usd=0.5)
    spend(key, 0.5)
    with pytest.raises(openai.BadRequestError) as caught:
        openai_sdk(live_server, raw, retries=2).chat.completions.create(
            model="auto", messages=HELLO
        )
    # No wait lifts it: the answer says so (routing.errors.is_final), so the SDK stops.
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert refusals(key, "budget") == 1
    assert upstream.received == []


def test_a_spent_budget_is_a_final_insufficient_quota_400_on_the_responses_api(
    live_server, router_config, upstream
):
    key, raw = limited_key(budget_usd=0.1, budget_period="week")
    spend(key, 0.2)
    with pytest.raises(openai.BadRequestError) as caught:
        openai_sdk(live_server, raw).responses.create(model="echo-medium", input="hello")
    assert caught.value.body["code"] == "insufficient_quota"
    assert caught.value.body["type"] == "insufficient_quota"
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert "weekly budget of $0.10" in caught.value.message
    assert upstream.received == []


def test_a_spent_budget_is_anthropics_usage_limit_400_and_the_sdk_does_not_retry(
    live_server, router_config, upstream
):
    key, raw = limited_key(budget_usd=2.0, budget_period="month")
    spend(key, 3.0)
    with pytest.raises(anthropic.BadRequestError) as caught:
        anthropic_sdk(live_server, raw, retries=2).messages.create(
            model="echo-medium", max_tokens=50, messages=HELLO
        )
    error = caught.value
    assert error.status_code == 400
    assert error.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": error.body["error"]["message"]},
    }
    assert "monthly budget of $2.00" in error.message and "regain access on" in error.message
    assert refusals(key, "budget") == 1  # not retried
    assert upstream.received == []


def test_a_budget_counts_billed_cost_net_of_the_cache_and_completion_tokens(
    live_server, router_config
):
    key, raw = limited_key(budget_usd=1.0)
    # Billed $0.30 (the estimate, $5, is superseded) + 175,000 completion tokens at $4/M.
    seed(
        decision(
            api_key=key,
            chosen_model="echo-medium",
            estimated_cost_usd=5.0,
            billed_prompt_cost_usd=0.3,
            completion_tokens=175_000,
        )
    )
    with pytest.raises(openai.BadRequestError) as caught:
        openai_sdk(live_server, raw).chat.completions.create(model="auto", messages=HELLO)
    assert "(spent $1.00)" in caught.value.message


def test_under_budget_past_the_soft_limit_each_answer_carries_a_warning(live_server, router_config):
    key, raw = limited_key(budget_usd=10.0, soft_budget_usd=1.0, budget_period="day")
    spend(key, 1.5)
    raw_response = openai_sdk(live_server, raw).chat.completions.with_raw_response.create(
        model="echo-medium", messages=HELLO
    )
    warning = raw_response.headers[WARNING_HEADER]
    assert "spent $1.50 of its day soft budget $1.00; hard limit $10.00" in warning
    assert raw_response.parse().choices[0].message.content


def test_past_the_soft_limit_budget_fallback_sends_auto_a_tier_cheaper(live_server, router_config):
    medium_task = [{"role": "user", "content": "x" * 500}]
    # An agent's tools: without any, a request this short is background work (easy).
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    key, raw = limited_key(soft_budget_usd=0.5, budget_fallback=True)
    sdk = openai_sdk(live_server, raw)
    before = sdk.chat.completions.with_raw_response.create(
        model="auto", messages=medium_task, tools=tools
    )
    assert before.headers["x-router-tier"] == "medium"
    spend(key, 0.6)
    from routing.limits.budgets import spend_cache

    spend_cache.forget()  # the spend is re-summed every spend_refresh_seconds
    after = sdk.chat.completions.with_raw_response.create(
        model="auto", messages=medium_task, tools=tools
    )
    assert after.headers["x-router-tier"] == "easy"
    assert after.headers["x-router-model"] == "echo-small"
    assert "auto goes a tier cheaper" in after.headers[WARNING_HEADER]


def test_requests_per_minute_refuse_with_openais_rate_limit_and_retry_after(
    live_server, router_config, upstream
):
    key, raw = limited_key(rpm_limit=2)
    sdk = openai_sdk(live_server, raw)
    for _ in range(2):
        sdk.chat.completions.create(model="echo-medium", messages=HELLO)
    with pytest.raises(openai.RateLimitError) as caught:
        sdk.chat.completions.create(model="echo-medium", messages=HELLO)
    error = caught.value
    assert error.body["type"] == "requests"
    assert error.body["code"] == "rate_limit_exceeded"
    assert "requests per minute: limit 2" in error.message
    # A request every 30 s refills the bucket: the next one passes in at most 30 s.
    assert 1 <= int(error.response.headers["retry-after"]) <= 30
    assert 0 < int(error.response.headers["retry-after-ms"]) <= 30_000
    assert len(upstream.received) == 2
    assert RouteDecision.objects.count() == 2
    assert refusals(key, "rpm") == 1


def drain(key: ApiKey) -> None:
    """Spend the minute of a key limited to 60 requests (the live server shares this process)."""
    store = rate_buckets()
    while store.take(key.pk, 60, 0, 0).taken:
        pass


def test_the_openai_sdk_waits_out_a_short_rate_limit_and_then_succeeds(live_server, router_config):
    key, raw = limited_key(rpm_limit=60)  # a request a second
    drain(key)
    answer = openai_sdk(live_server, raw, retries=2).chat.completions.create(
        model="echo-medium", messages=HELLO
    )
    assert answer.choices[0].message.content
    assert refusals(key, "rpm") == 1  # refused once, waited retry-after-ms, then passed


def test_a_rate_limit_is_anthropics_rate_limit_error_and_its_sdk_waits_it_out(
    live_server, router_config
):
    key, raw = limited_key(rpm_limit=60)
    drain(key)
    with pytest.raises(anthropic.RateLimitError) as caught:
        anthropic_sdk(live_server, raw).messages.create(
            model="echo-medium", max_tokens=20, messages=HELLO
        )
    assert caught.value.body["error"]["type"] == "rate_limit_error"
    assert caught.value.response.headers["retry-after"] == "1"
    answer = anthropic_sdk(live_server, raw, retries=2).messages.create(
        model="echo-medium", max_tokens=20, messages=HELLO
    )
    assert answer.content[0].text
    assert refusals(key, "rpm") == 2


def test_prompt_tokens_per_minute_count_what_pinch_sends(live_server, router_config):
    key, raw = limited_key(tpm_limit=1000)
    sdk = openai_sdk(live_server, raw)
    big = [{"role": "user", "content": "word " * 1000}]  # ~1,670 tokens: over the minute
    # Larger than the whole minute: final, a 400 on chat (routing.errors.AGENT_RETRIED_FINALS).
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.chat.completions.create(model="echo-medium", messages=big)
    assert caught.value.body["type"] == "tokens"
    assert "Request too large" in caught.value.message
    assert "retry-after" not in caught.value.response.headers
    half = [{"role": "user", "content": "w" * 1800}]  # 600 tokens
    sdk.chat.completions.create(model="echo-medium", messages=half)
    with pytest.raises(openai.RateLimitError) as caught:
        sdk.chat.completions.create(model="echo-medium", messages=half)
    assert "prompt tokens per minute: limit 1000" in caught.value.message
    assert int(caught.value.response.headers["retry-after"]) >= 1
    assert refusals(key, "tpm") == 2


def test_a_responses_request_over_its_rate_is_openais_rate_limit(live_server, router_config):
    key, raw = limited_key(rpm_limit=1)
    sdk = openai_sdk(live_server, raw)
    sdk.responses.create(model="echo-medium", input="hello")
    with pytest.raises(openai.RateLimitError) as caught:
        sdk.responses.create(model="echo-medium", input="hello")
    assert caught.value.body["code"] == "rate_limit_exceeded"
    assert caught.value.response.headers["retry-after"]


def test_a_key_without_limits_is_never_refused_and_gets_no_warning(live_server, router_config):
    _, raw = create_api_key("free")
    sdk = openai_sdk(live_server, raw)
    for _ in range(5):
        response = sdk.chat.completions.with_raw_response.create(
            model="echo-medium", messages=HELLO
        )
        assert WARNING_HEADER.lower() not in response.headers
    assert not LimitRefusal.objects.exists()


def test_a_dry_run_of_a_key_over_its_budget_is_answered(live_server, router_config):
    key, raw = limited_key(budget_usd=0.1)
    spend(key, 1.0)
    sdk = openai_sdk(live_server, raw)
    dry = sdk.chat.completions.with_raw_response.create(
        model="auto", messages=HELLO, extra_headers={"X-Router-Dry-Run": "1"}
    )
    assert dry.http_response.json()["dry_run"] is True


def test_with_redis_down_a_key_is_limited_by_this_process_and_nothing_fails(
    live_server, router_config, settings, caplog
):
    from tests.support.ports import refused_port

    key, raw = limited_key(rpm_limit=2)
    with refused_port() as port:
        settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
        sdk = openai_sdk(live_server, raw)
        for _ in range(2):
            assert sdk.chat.completions.create(model="echo-medium", messages=HELLO).choices
        with pytest.raises(openai.RateLimitError):
            sdk.chat.completions.create(model="echo-medium", messages=HELLO)
    assert any("rate_limits_local" in r.getMessage() for r in caplog.records)


def test_a_budget_that_cannot_be_summed_admits_the_request_and_says_so(
    live_server, router_config, monkeypatch, caplog
):
    from django.db import OperationalError

    from routing.limits import budgets

    def unreadable(*args, **kwargs):
        raise OperationalError("database is locked")

    _, raw = limited_key(budget_usd=1.0)
    monkeypatch.setattr(budgets, "spend_by_key", unreadable)
    answer = openai_sdk(live_server, raw).chat.completions.create(
        model="echo-medium", messages=HELLO
    )
    assert answer.choices[0].message.content
    assert any("budget_unchecked" in r.getMessage() for r in caplog.records)
