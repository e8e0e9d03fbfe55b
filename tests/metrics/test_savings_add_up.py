"""The savings by cause add up to what was billed, on any provider, counted against the cache
the bill had (issue 41): random billed calls priced the way the request path prices them
(routing.pricing, routing.dispatch.Outcome), on models with and without a cache block, from
upstreams that report cache reads and writes and from one that reports none."""

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metrics.savings import savings_by_cause
from metrics.summary import DOLLAR_DIGITS, pinch_summary
from routing.config import DEFAULT_CONFIG_PATH
from routing.dispatch.outcome import Outcome
from routing.models import RouteDecision
from routing.pricing import PER_TOKENS, billed_prompt_cost_usd
from routing.summaries.writes import TABLES
from tests.support.decisions import decision, seed

pytestmark = pytest.mark.django_db

# A model with a cache block (writes at 1.25x, reads at 0.1x: Anthropic's prices).
CACHED_MODEL = {
    "id": "cache-block",
    "provider": "local",
    "tier": "hard",
    "context_window": 200000,
    "prompt_price": 3.0,
    "cached_prompt_price": 0.3,
    "completion_price": 15.0,
    "cache": {"ttl": "5m", "min_tokens": 1024},
}
MODELS = ("qwen-small", "gpt-4.1-mini", "gpt-4.1", "cache-block")


@st.composite
def billed_calls(draw, reports_cache: bool):
    """One billed call's columns: the provider's usage, pinch's cut and the plan's estimate."""
    prompt = draw(st.integers(1, 200_000))
    read = draw(st.integers(0, prompt)) if reports_cache else None
    written = draw(st.integers(0, prompt - read)) if reports_cache else None
    final = draw(st.integers(1, 200_000))
    removed = draw(st.integers(0, 100_000))
    # The plan's estimate of the unpruned request (characters / 3): not the provider's count.
    estimate = draw(st.integers(1, 300_000))
    return {
        "chosen_model": draw(st.sampled_from(MODELS)),
        "baseline_model": draw(st.sampled_from(("", *MODELS))),
        "prompt_tokens": prompt,
        "completion_tokens": draw(st.integers(0, 20_000)),
        "cache_read_tokens": read,
        "cache_write_tokens": written,
        "pinch_original_tokens": final + removed,
        "pinch_final_tokens": final,
        "split": (draw(st.integers(0, estimate)), estimate) if removed else None,
    }


def priced(config, call: dict) -> dict:
    """The call's row as the recording path writes it: billed and unpruned cost."""
    model = config.model(call["chosen_model"])
    split = call.pop("split")
    outcome = Outcome(
        model=model,
        cache_read_tokens=call["cache_read_tokens"],
        cache_write_tokens=call["cache_write_tokens"],
        unpruned_split=None if split is None else (split[0], split[1] - split[0]),
    )
    billed = billed_prompt_cost_usd(
        model, call["prompt_tokens"], call["cache_read_tokens"], call["cache_write_tokens"]
    )
    return {
        **call,
        "billed_prompt_cost_usd": billed,
        "unpruned_cost_usd": outcome.unpruned_cost_usd(billed),
    }


def config_with_a_cache_block(write_default_config):
    models = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text())["models"]
    return write_default_config({"models": [*models, CACHED_MODEL]})


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    with_cache=st.lists(billed_calls(reports_cache=True), max_size=8),
    without_cache=st.lists(billed_calls(reports_cache=False), min_size=1, max_size=8),
    upstream_reports_cache=st.booleans(),
)
def test_the_causes_add_up_to_the_bill_and_no_cache_is_credited_that_the_bill_had_not(
    write_default_config, with_cache, without_cache, upstream_reports_cache
):
    RouteDecision.objects.all().delete()
    for table in TABLES:
        table.objects.all().delete()
    config = config_with_a_cache_block(write_default_config)
    calls = [priced(config, dict(c)) for c in without_cache]
    if upstream_reports_cache:
        calls += [priced(config, dict(c)) for c in with_cache]
    seed(*(decision(**call) for call in calls))

    figures = savings_by_cause(config)

    bill = sum(
        c["billed_prompt_cost_usd"]
        + c["completion_tokens"] * config.model(c["chosen_model"]).completion_price / PER_TOKENS
        for c in calls
    )
    # The summaries add the same floats in another order than this sum does: a total that
    # falls on half a micro-dollar may round either way, so one micro-dollar apart is equal
    # (0.100332 - 0.100331 is a hair over 1e-6 in floats: half a unit more of slack).
    shown_unit = 10**-DOLLAR_DIGITS
    assert figures["bill_usd_30d"] == pytest.approx(
        round(bill, DOLLAR_DIGITS), abs=1.5 * shown_unit
    )
    shown = ("bill_usd_30d", "routing_usd_30d", "cache_usd_30d", "pinch_usd_30d")
    assert round(sum(figures[k] for k in shown), DOLLAR_DIGITS) == figures["baseline_usd_30d"]
    # One figure, computed in one place: equal to the micro-dollar, not about equal.
    assert figures["pinch_usd_30d"] == pinch_summary(config)["net_dollars_saved_usd_30d"]
    if not any(c["cache_read_tokens"] or c["cache_write_tokens"] for c in calls):
        # An upstream that reports no cached tokens: the cache saved nothing.
        assert figures["cache_usd_30d"] == 0
    # Pinned to their own model, routing saved nothing either.
    pinned = [{**c, "baseline_model": c["chosen_model"]} for c in calls]
    RouteDecision.objects.all().delete()
    for table in TABLES:
        table.objects.all().delete()
    seed(*(decision(**call) for call in pinned))
    assert savings_by_cause(config)["routing_usd_30d"] == 0
