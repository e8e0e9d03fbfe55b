"""A conversation's figures carried from request to request (pinch/carry.py): the same plan.

What pinch sends must not depend on whether a worker read a message afresh
or took its figures over from the conversation's previous request: each
request of generated agent sessions (every message a fresh copy, as parsed
off the wire, some edited in place between requests, the knobs changed
midway), and each request of the real sessions of the corpus, is planned
both ways and must come out byte for byte alike, ledger and stats included.
"""

import copy
import gc
import json
import weakref
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinch.carry import MessageFacts
from pinch.ledger import message_hash
from pinch.payback import CacheModel, plan
from pinch.prefix import message_fingerprints
from pinch.tokens import estimate_tokens, extract_text, message_tokens
from routing.replay.corpus import corpus_dir
from tests.pinch.test_core_properties import agent_sessions
from tests.support.ci import missing
from tests.support.corpus import recorded_sessions
from tests.support.knobs import shipped_knobs

ANTHROPIC = CacheModel(read_multiplier=0.1, write_multiplier=1.25)
KNOBS = shipped_knobs(budget_tokens=2000, min_payback=1.0, turns_ahead=1.0)
# Another compression of the same results: what was carried under KNOBS no longer holds.
OTHER_KNOBS = replace(KNOBS, max_summarize_chars=3000, lines_max_chars=None)


def requests(messages):
    for t, message in enumerate(messages):
        if t > 0 and message.get("role") == "assistant":
            yield messages[:t]


def wire_copy(messages):
    """The request as a worker parses it: equal content, none of the same objects."""
    return json.loads(json.dumps(messages))


def fresh_figures(messages):
    return {
        "tokens": [estimate_tokens(extract_text(m)) for m in messages],
        "sizes": [message_tokens(m) for m in messages],
        "hashes": [message_hash(m) for m in messages],
        "fingerprints": message_fingerprints(messages),
    }


edits = st.lists(st.tuples(st.integers(0, 400), st.sampled_from(["text", "number"])), max_size=3)


def edited(messages, at, kind):
    """``messages`` with one earlier message changed in place: its text, or a number that
    Python's == takes for the one before (1 for true)."""
    messages = copy.deepcopy(messages)
    message = messages[at % len(messages)]
    if kind == "text":
        message["content"] = f"{extract_text(message)} (edited)"
    else:
        message["index"] = 1 if message.get("index") is True else True
    return messages


@settings(max_examples=60, deadline=None)
@given(agent_sessions(), st.booleans(), st.integers(0, 60), edits)
def test_every_request_is_planned_alike_with_its_figures_carried_or_read_afresh(
    messages, notes, switch_at, changes
):
    ledgers = {"fresh": None, "carried": None}
    carried, memo, digests = None, {}, {}
    for n, request in enumerate(requests(messages)):
        for at, kind in changes:
            if at // 10 == n:
                request = edited(request, at, kind)
        knobs = KNOBS if n < switch_at else OTHER_KNOBS
        payload, ledgers["fresh"], stats = plan(
            wire_copy(request), ledgers["fresh"], knobs, ANTHROPIC, notes=notes
        )
        sent = wire_copy(request)
        facts = MessageFacts(sent, carried, digests)
        again, ledgers["carried"], stats_again = plan(
            sent, ledgers["carried"], knobs, ANTHROPIC, memo=memo, notes=notes, facts=facts
        )
        assert json.dumps(again) == json.dumps(payload)
        assert ledgers["carried"] == ledgers["fresh"]
        assert stats_again == stats
        figures = fresh_figures(sent)
        assert {name: getattr(facts, name) for name in figures} == figures
        carried = facts.carried()


@pytest.mark.parametrize("recorded", recorded_sessions())
def test_every_request_of_a_real_session_is_planned_alike_carried_or_read_afresh(recorded):
    if recorded is None:
        missing(f"the shared corpus at {corpus_dir()} (set CORPUS_DIR)")
    knobs = shipped_knobs()
    ledgers = {"fresh": None, "carried": None}
    carried, memo = None, {}
    for request in requests(recorded.messages):
        payload, ledgers["fresh"], stats = plan(
            wire_copy(request), ledgers["fresh"], knobs, ANTHROPIC, notes=True
        )
        sent = wire_copy(request)
        facts = MessageFacts(sent, carried)
        again, ledgers["carried"], stats_again = plan(
            sent, ledgers["carried"], knobs, ANTHROPIC, memo=memo, notes=True, facts=facts
        )
        assert (json.dumps(again), ledgers["carried"], stats_again) == (
            json.dumps(payload),
            ledgers["fresh"],
            stats,
        )
        carried = facts.carried()


def test_a_repeated_request_takes_over_every_figure_and_a_changed_message_is_read_again():
    messages = [
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 2000, "index": 1},
        {"role": "assistant", "content": "Done."},
    ]
    first = MessageFacts(wire_copy(messages))
    first.fingerprints  # noqa: B018 - read, so that it is carried
    again = MessageFacts(wire_copy(messages), first.carried())
    assert again.repeated == len(messages)
    assert again.fingerprints == first.fingerprints

    aliased = wire_copy(messages)
    aliased[2]["index"] = True  # == 1 in Python, not the same JSON
    changed = MessageFacts(aliased, first.carried())
    assert changed.repeated == 2
    assert changed.fingerprints == message_fingerprints(aliased)
    assert changed.fingerprints[2] != first.fingerprints[2]


def test_a_requests_facts_and_its_payloads_are_freed_as_soon_as_dropped():
    messages = [
        {"role": "user", "content": "Fix the bug."},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 2000},
    ]
    earlier = MessageFacts(wire_copy(messages))
    earlier.sizes  # noqa: B018 - read, so that it is carried
    facts = MessageFacts(wire_copy(messages), earlier.carried())
    pruned = [facts.messages[0], {**messages[1], "content": "[pruned]"}]
    sent = facts.sent(pruned)
    assert sent.changed == [1]
    assert sent.tokens[1] < facts.tokens[1]
    facts.carried()
    gone = weakref.ref(facts)
    gc.disable()  # freed by reference counting alone, with no collector's pass to help
    try:
        del facts, sent
        assert gone() is None
    finally:
        gc.enable()
