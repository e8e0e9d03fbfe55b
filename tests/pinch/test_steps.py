"""The payback rule on the net cost (pinch/steps.py), by hand-computed cases and as properties.

A step cheaper on its own request than sending the payload as it was is
always taken; the margin guards only what later turns must repay; a step
staked on them never costs more than the bank and the allowed loss; a cold
cache has nothing to rewrite.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinch.steps import CacheModel, net_cost_now, step_pays

ANTHROPIC = CacheModel(read_multiplier=0.1, write_multiplier=1.25)
NO_PREMIUM = CacheModel(read_multiplier=0.1, write_multiplier=1.0)
OLD_OPENAI = CacheModel(read_multiplier=0.25, write_multiplier=1.0)
NO_CACHE = CacheModel(read_multiplier=1.0, write_multiplier=1.0)


# Hand-computed: net now = (write - read) * rewritten - write * saved;
# repaid = read * saved * turns (turns_ahead 1); taken when net <= 0 or repaid >= margin * net.
@pytest.mark.parametrize(
    ("saved", "rewritten", "turns", "cache", "min_payback", "pays"),
    [
        # The case: 0.1 reads, no write premium, ~15.1k rewritten for
        # 15.2k removed: 0.9 * 15100 - 15200 < 0, cheaper at once, taken
        # whatever the margin (round two's gross rule refused it).
        (15200, 15100, 6, NO_PREMIUM, 3.0, True),
        (15200, 15100, 1, NO_PREMIUM, 1000.0, True),
        # Anthropic: net = 1.15 * 2000 - 1.25 * 1000 = 1050; repaid 100 a turn.
        (1000, 2000, 10, ANTHROPIC, 1.0, False),
        (1000, 2000, 11, ANTHROPIC, 1.0, True),
        # The margin applies to the net 1050 only: 3 * 1050 needs 32 turns.
        (1000, 2000, 31, ANTHROPIC, 3.0, False),
        (1000, 2000, 32, ANTHROPIC, 3.0, True),
        # Older OpenAI: net = 0.75 * 2000 - 1000 = 500, repaid 250 a turn.
        (1000, 2000, 2, OLD_OPENAI, 1.0, True),
        (1000, 2100, 2, OLD_OPENAI, 1.0, False),
        # Without a cache a rewrite costs nothing: any saving pays.
        (1, 10**9, 1, NO_CACHE, 3.0, True),
        # Nothing saved never pays, even when nothing is rewritten.
        (0, 0, 1000, ANTHROPIC, 1.0, False),
        (0, 1, 1000, ANTHROPIC, 1.0, False),
    ],
)
def test_a_step_pays_when_cheaper_at_once_or_repaid_by_the_margin(
    saved, rewritten, turns, cache, min_payback, pays
):
    assert step_pays(saved, rewritten, turns, cache, 1.0, min_payback) is pays


# ``banked``: what pinch saved the conversation so far. Below zero an earlier
# step is still unrepaid, and a step that must be repaid too waits.
@pytest.mark.parametrize(
    ("saved", "rewritten", "banked", "pays"),
    [
        # Net 1050, repaid 100 a turn over 32 turns at margin 3: pays ...
        (1000, 2000, 0.0, True),
        (1000, 2000, 5000.0, True),
        # ... but not on top of an unrepaid step, however small the hole.
        (1000, 2000, -0.5, False),
        (1000, 2000, -(10**6), False),
        # Cheaper at once (0.9 * 15100 - 15200 < 0 without a write premium): taken in the red too.
        (15200, 15100, -(10**6), True),
    ],
)
def test_a_step_to_be_repaid_is_not_stacked_on_an_unrepaid_one(saved, rewritten, banked, pays):
    cache = NO_PREMIUM if saved == 15200 else ANTHROPIC
    assert step_pays(saved, rewritten, 32, cache, 1.0, 3.0, banked) is pays


# ``allowed_loss``: what the conversation may be out of pocket on pinch
# beyond what pinch saved it, should it end right after this step.
@pytest.mark.parametrize(
    ("banked", "allowed_loss", "pays"),
    [
        # Net 1050 (repaid 100 a turn over 32 turns at margin 3): pays when
        # the bank and the allowance together cover it ...
        (0.0, 1050.0, True),
        (50.0, 1000.0, True),
        (1050.0, 0.0, True),
        # ... and waits when they do not: a larger conversation, or a bank, carries it later.
        (0.0, 1049.0, False),
        (49.0, 1000.0, False),
        (0.0, 0.0, False),
        # Cheaper at once (0.9 * 15100 - 15200 < 0 without a write premium): nothing at stake.
        (-(10**6), 0.0, True),
    ],
)
def test_a_step_may_risk_only_what_pinch_saved_and_the_allowed_loss(banked, allowed_loss, pays):
    saved, rewritten, cache = (15200, 15100, NO_PREMIUM) if banked < -1 else (1000, 2000, ANTHROPIC)
    assert step_pays(saved, rewritten, 32, cache, 1.0, 3.0, banked, allowed_loss) is pays


def test_a_session_expected_to_run_longer_pays_for_a_larger_rewrite():
    assert not step_pays(1000, 4000, 20, ANTHROPIC, 0.5, 1.0)
    assert step_pays(1000, 4000, 20, ANTHROPIC, 2.0, 1.0)


caches = st.builds(
    CacheModel,
    read_multiplier=st.floats(0.0, 1.0),
    write_multiplier=st.floats(1.0, 2.0),
)


@given(
    st.integers(1, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 10**4),
    caches,
    st.floats(0.01, 10.0),
    st.floats(0.01, 1000.0),
    st.floats(-(10.0**9), 10.0**9),
)
def test_a_step_cheaper_at_once_is_never_refused(
    saved, rewritten, turns, cache, turns_ahead, margin, banked
):
    if net_cost_now(saved, rewritten, cache) <= 0:
        assert step_pays(saved, rewritten, turns, cache, turns_ahead, margin, banked)


@given(
    st.integers(1, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    caches,
    st.floats(0.01, 1000.0),
    st.floats(-(10.0**9), -(10.0**-6)),
)
def test_in_the_red_only_a_step_cheaper_at_once_is_taken(
    saved, rewritten, turns, cache, margin, banked
):
    if step_pays(saved, rewritten, turns, cache, 1.0, margin, banked):
        assert net_cost_now(saved, rewritten, cache) <= 0


@given(
    st.integers(1, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    caches,
    st.floats(-(10.0**9), 10.0**9),
    st.floats(0.0, 10.0**9),
)
def test_a_step_never_costs_more_than_the_bank_and_the_allowed_loss(
    saved, rewritten, turns, cache, banked, allowed_loss
):
    if step_pays(saved, rewritten, turns, cache, 1.0, 1.0, banked, allowed_loss):
        assert net_cost_now(saved, rewritten, cache) <= max(banked + allowed_loss, 0.0)


@given(st.integers(1, 10**6), caches, st.floats(0.01, 1000.0))
def test_a_step_on_a_cold_cache_rewrites_nothing_paid_for_and_is_taken(saved, cache, margin):
    assert step_pays(saved, 0, 0, cache, 1.0, margin)


@given(st.integers(1, 10**5), st.integers(0, 10**5), st.integers(1, 500), caches)
def test_a_larger_margin_never_takes_a_step_a_smaller_one_refuses(saved, rewritten, turns, cache):
    if step_pays(saved, rewritten, turns, cache, 1.0, 5.0):
        assert step_pays(saved, rewritten, turns, cache, 1.0, 2.0)


@pytest.mark.parametrize(
    ("lifetime", "gap", "cold"),
    [
        (300, None, False),
        (300, 299.9, False),
        (300, 300, False),
        (300, 300.1, True),
        (3600, 900, False),
    ],
)
def test_a_gap_longer_than_the_cache_lifetime_is_cold(lifetime, gap, cold):
    assert CacheModel(lifetime_seconds=lifetime).cold_after(gap) is cold


# ``settle_turns``: a conversation's first requests say nothing of how long it
# will run; a step staked on later turns counts only the turns after them.
# Net 1050 on Anthropic's prices, repaid 100 a turn: margin 1 needs 11 turns ahead.
@pytest.mark.parametrize(
    ("turns", "settle", "pays"),
    [
        (11, 0, True),
        (11, 1, False),
        (25, 14, True),
        (24, 14, False),
        # Within the first settle_turns nothing is expected ahead at all.
        (14, 14, False),
        (3, 14, False),
    ],
)
def test_a_young_conversation_counts_only_the_turns_after_it_settles(turns, settle, pays):
    assert step_pays(1000, 2000, turns, ANTHROPIC, 1.0, 1.0, settle_turns=settle) is pays


@given(
    st.integers(1, 10**5),
    st.integers(0, 10**5),
    st.integers(0, 500),
    caches,
    st.integers(0, 50),
    st.integers(0, 50),
    st.floats(-(10.0**6), 10.0**6),
)
def test_a_longer_settling_never_takes_a_step_a_shorter_one_refuses(
    saved, rewritten, turns, cache, settle, more, banked
):
    if step_pays(saved, rewritten, turns, cache, 1.0, 4.0, banked, settle_turns=settle + more):
        assert step_pays(saved, rewritten, turns, cache, 1.0, 4.0, banked, settle_turns=settle)


@given(st.integers(1, 10**6), st.integers(0, 10**6), st.integers(0, 50), caches)
def test_before_a_conversation_settles_only_a_step_cheaper_at_once_is_taken(
    saved, rewritten, turns, cache
):
    if step_pays(saved, rewritten, turns, cache, 1.0, 1.0, 10.0**9, settle_turns=turns):
        assert net_cost_now(saved, rewritten, cache) <= 0
