"""A request's reserved worst case covers whatever it can be billed (routing/limits/ledger.py).

The budget holds only if no answer costs more than its reservation: for any
model and prices, any prompt billed within what was measured (cache reads and
writes in any split) and any answer within ``max_tokens``, the spend counted
against the budget is at most the worst case reserved.
"""

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from routing.config import ModelConfig
from routing.limits.budgets import spend_usd
from routing.limits.ledger import worst_case_usd
from routing.pricing import billed_prompt_cost_usd

prices = st.floats(min_value=0, max_value=200, allow_nan=False)


@st.composite
def billed_requests(draw):
    cache = draw(st.one_of(st.none(), st.sampled_from([{"ttl": "5m"}, {"ttl": "1h"}])))
    prompt_price = draw(prices)
    model = ModelConfig(
        id="m",
        provider="p",
        tier="medium",
        context_window=draw(st.integers(1, 2_000_000)),
        prompt_price=prompt_price,
        cached_prompt_price=draw(st.floats(min_value=0, max_value=prompt_price)),
        completion_price=draw(prices),
        cache=cache,
        default_max_tokens=draw(st.one_of(st.none(), st.integers(1, 100_000))),
    )
    measured = draw(st.integers(0, 1_000_000))
    asked = draw(st.integers(0, 100_000))
    answer_cap = asked or model.default_max_tokens or max(model.context_window - measured, 0)
    prompt = draw(st.integers(0, measured))
    read = draw(st.integers(0, prompt))
    written = draw(st.integers(0, prompt - read))
    completion = draw(st.integers(0, answer_cap))
    plan = SimpleNamespace(
        measured_tokens=measured,
        request=SimpleNamespace(max_tokens=asked),
        candidates=[model],
    )
    return plan, model, prompt, read, written, completion


@given(billed_requests())
def test_no_answer_within_its_request_costs_more_than_its_reservation(case):
    plan, model, prompt, read, written, completion = case
    billed = billed_prompt_cost_usd(model, prompt, read, written)
    assert spend_usd(billed, completion, model) <= worst_case_usd(plan) * (1 + 1e-9) + 1e-12
