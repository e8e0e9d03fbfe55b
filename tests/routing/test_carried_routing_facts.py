"""Routing's readings of a conversation (background work, the task's start and text, what
the user typed, the tier, the turn count, the quality signals) and its figures of the
payload (the prefix probe's fingerprints and row, the measured prompt, the cache
forecast's tokens) are the same whether each message is read afresh or carried over from
the conversation's previous request (pinch.carry.MessageFacts and SentFacts).

Every request of every real session of the corpus, and of generated agent sessions whose
earlier messages are edited between requests (a user turn that becomes harness text only, a
role that changes), is read both ways; so is a payload made of each, some of its tool
results rewritten (as pinch does) alike from request to request, some not, some with a
number Python's == takes for the one before (true for 1).
"""

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinch.carry import MessageFacts
from pinch.prefix import message_fingerprints
from pinch.tokens import estimate_tokens, extract_text, message_tokens
from routing.background import background_kind
from routing.classifier import heuristic_tier
from routing.config import validate_config
from routing.prefix_probe import PrefixProbe
from routing.quality import request_signals
from routing.replay.corpus import corpus_dir
from routing.selection import measure_prompt_tokens, remeasured
from routing.session_routing import assistant_turns
from routing.task_text import task_start, task_text, typed_chars
from tests.pinch.test_core_properties import agent_sessions
from tests.support.ci import missing
from tests.support.config import base_config
from tests.support.corpus import agent_requests, recorded_sessions, wire_copy

CONFIG = validate_config(base_config("http://127.0.0.1:9/v1"))
TOOLS = [{"type": "function", "function": {"name": "bash"}}]


def readings(messages, facts=None):
    roles = facts.roles if facts is not None else None
    compressed = range(0, len(messages), 3)
    return {
        "background": [
            background_kind(model, messages, tools, tokens, CONFIG, facts)
            for model in ("auto", "claude-haiku-4-5")
            for tools, tokens in ((TOOLS, 50_000), (None, 10))
        ],
        "task start": task_start(messages, facts),
        "task text": task_text(messages, facts),
        "typed chars": typed_chars(messages, facts),
        "tier": heuristic_tier(messages, TOOLS, CONFIG, facts),
        "assistant turns": roles.count("assistant") if roles else assistant_turns(messages),
        "signals": request_signals(messages, compressed, facts=facts),
    }


def assert_read_alike_carried(sessions_requests):
    carried = None
    for request in sessions_requests:
        sent = wire_copy(request)
        facts = MessageFacts(sent, carried)
        assert readings(sent, facts) == readings(wire_copy(request)), len(request)
        carried = facts.carried()


@pytest.mark.parametrize("recorded", recorded_sessions())
def test_every_request_of_a_real_session_is_routed_alike_carried_or_read_afresh(recorded):
    if recorded is None:
        missing(f"the shared corpus at {corpus_dir()} (set CORPUS_DIR)")
    assert_read_alike_carried(agent_requests(recorded.messages))


# An earlier message edited in place between two requests: a user turn left with only the
# harness's text (no longer a turn), a message given another role, a background prompt.
EDITS = {
    "harness only": lambda m: {**m, "content": "<system-reminder>x</system-reminder>"},
    "becomes a user turn": lambda m: {**m, "role": "user", "content": "Now fix it."},
    "becomes a tool result": lambda m: {**m, "role": "tool", "tool_call_id": "call_0_0"},
    "asks for a title": lambda m: {**m, "role": "system", "content": "Give a 3-5 word title."},
}
edits = st.lists(st.tuples(st.integers(0, 400), st.sampled_from(sorted(EDITS))), max_size=3)


@settings(max_examples=80, deadline=None)
@given(agent_sessions(), edits)
def test_every_request_of_an_edited_session_is_routed_alike_carried_or_read_afresh(
    messages, changes
):
    def edited_requests():
        for n, request in enumerate(agent_requests(messages)):
            request = copy.deepcopy(request)
            for at, name in changes:
                if at // 10 <= n:
                    request[at % len(request)] = EDITS[name](request[at % len(request)])
            yield request

    assert_read_alike_carried(edited_requests())


# How a payload's tool result is rewritten on a request: alike on each request (a result
# compressed once and sent so after), anew on each request, or with a number that Python's
# == takes for the previous request's (1, then true).
REWRITES = {
    "alike": lambda m, n: {**m, "content": f"[compressed] {extract_text(m)[:40]}"},
    "anew": lambda m, n: {**m, "content": f"[compressed on request {n}]"},
    "number": lambda m, n: {**m, "content": "[compressed]", "index": 1 if n % 2 else True},
}
rewrites = st.lists(st.sampled_from(sorted(REWRITES)), min_size=1, max_size=3)


def payload_of(request, n, kinds):
    """A payload of ``request``: each of its tool results rewritten by one of ``kinds`` (by
    its index), or left as the very message, as pinch leaves most."""
    payload = list(request)
    for i, message in enumerate(request):
        kind = kinds[i % len(kinds)] if i % 4 else None
        if kind is not None and isinstance(message, dict) and message.get("role") == "tool":
            payload[i] = REWRITES[kind](message, n)
    return payload


def assert_payloads_measured_alike_carried(sessions_requests, kinds):
    carried, probes = None, (PrefixProbe(), PrefixProbe())
    for n, request in enumerate(sessions_requests):
        sent = wire_copy(request)
        facts = MessageFacts(sent, carried)
        payload = payload_of(sent, n, kinds)
        fresh = payload_of(wire_copy(request), n, kinds)
        assert facts.sent(payload).fingerprints == message_fingerprints(fresh)
        assert facts.sent(payload).sizes == [message_tokens(m) for m in fresh]
        assert facts.sent(payload).tokens == [estimate_tokens(extract_text(m)) for m in fresh]
        measured = measure_prompt_tokens(sent, TOOLS, facts.sizes)
        assert remeasured(measured, sent, payload, facts.sizes, facts.sent(payload)) == (
            measure_prompt_tokens(fresh, TOOLS)
        )
        lengths = (len(payload),)
        assert probes[0].figures("k", payload, lengths, None, facts) == probes[1].figures(
            "k", fresh, lengths
        )
        carried = facts.carried()


@pytest.mark.parametrize("recorded", recorded_sessions())
def test_every_payload_of_a_real_session_is_measured_alike_carried_or_read_afresh(recorded):
    if recorded is None:
        missing(f"the shared corpus at {corpus_dir()} (set CORPUS_DIR)")
    assert_payloads_measured_alike_carried(agent_requests(recorded.messages), sorted(REWRITES))


@settings(max_examples=80, deadline=None)
@given(agent_sessions(), rewrites)
def test_every_payload_of_a_generated_session_is_measured_alike_carried_or_read_afresh(
    messages, kinds
):
    assert_payloads_measured_alike_carried(agent_requests(messages), kinds)
