"""A key's budget period is the one the instant falls in, whatever was asked before.

The period last found is kept per kind, reset day and time zone (routing/limits/budgets.py)
and handed out again while the clock is inside it: asked across a reset, back in time, or
for another reset day, the answer is still the period a fresh process would find.
"""

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from routing.config import validate_config
from routing.limits import budgets
from routing.models import PERIOD_DAY, PERIOD_MONTH, PERIOD_WEEK
from tests.support.config import base_config

START = datetime(2026, 1, 1, tzinfo=UTC)
instants = st.integers(0, 3 * 366 * 24 * 3600).map(lambda s: START + timedelta(seconds=s))
asks = st.lists(
    st.tuples(
        st.sampled_from((PERIOD_DAY, PERIOD_WEEK, PERIOD_MONTH)), st.integers(1, 31), instants
    ),
    min_size=1,
    max_size=12,
)


def config_resetting_on(day: int):
    data = base_config("http://127.0.0.1:9/v1")
    data.setdefault("objective", {})["billing_reset_day"] = day
    return validate_config(data)


CONFIGS = {day: config_resetting_on(day) for day in range(1, 32)}


@settings(max_examples=200, deadline=None)
@given(asks)
def test_each_instant_gets_the_budget_period_it_falls_in(asked):
    for period, reset_day, now in asked:
        config = CONFIGS[reset_day]
        answer = budgets.budget_period(period, config, now)
        budgets._periods.clear()
        fresh = budgets.budget_period(period, config, now)

        assert answer == fresh
        assert answer.start <= now < answer.resets_at
