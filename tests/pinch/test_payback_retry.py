"""A retry, the same request planned again with the ledger its first sending left, is
planned as that first sending was (pinch/payback.py): the ledger comes back as it is,
without replaying or hashing anything, on generated sessions and on the corpus' own."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinch.carry import MessageFacts
from pinch.payback import CacheModel, plan
from routing.replay.corpus import corpus_dir
from tests.pinch.test_core_properties import agent_sessions
from tests.support.ci import missing
from tests.support.corpus import agent_requests, recorded_sessions, wire_copy
from tests.support.knobs import shipped_knobs

ANTHROPIC = CacheModel(read_multiplier=0.1, write_multiplier=1.25)


def assert_retries_planned_alike(messages, knobs, notes, cold_at=()):
    ledger, carried, memo = None, None, {}
    for n, request in enumerate(agent_requests(messages)):
        sent = wire_copy(request)
        facts = MessageFacts(sent, carried)
        cold = n in cold_at
        payload, ledger, stats = plan(
            sent, ledger, knobs, ANTHROPIC, memo=memo, cold=cold, notes=notes, facts=facts
        )
        carried = facts.carried()
        again = wire_copy(request)
        retried, same, stats_again = plan(
            again,
            ledger,
            knobs,
            ANTHROPIC,
            memo=memo,
            cold=cold,
            notes=notes,
            facts=MessageFacts(again, carried),
        )
        assert json.dumps(retried) == json.dumps(payload)
        assert same == ledger
        # The step is in the ledger now, so its prefix is where the step left it.
        if stats["step"]:
            stats = {**stats, "stable_prefix_before": stats["stable_prefix"]}
        assert stats_again == stats


@settings(max_examples=60, deadline=None)
@given(agent_sessions(), st.booleans(), st.sets(st.integers(0, 30), max_size=4))
def test_a_retried_request_of_a_generated_session_is_planned_as_it_was_first_sent(
    messages, notes, cold_at
):
    knobs = shipped_knobs(budget_tokens=2000, min_payback=1.0, turns_ahead=1.0)
    assert_retries_planned_alike(messages, knobs, notes, cold_at)


@pytest.mark.parametrize("recorded", recorded_sessions())
def test_a_retried_request_of_a_real_session_is_planned_as_it_was_first_sent(recorded):
    if recorded is None:
        missing(f"the shared corpus at {corpus_dir()} (set CORPUS_DIR)")
    assert_retries_planned_alike(recorded.messages, shipped_knobs(), notes=True)
