"""Pinch that pays (pinch/payback.py): the payback rule, decisions made once, ledgers rebuilt alike.

The rule is table-driven against hand-computed cases; the promises (a step
only when it pays, nothing decided twice, a payload that changes only at a
step, the same choices with or without a ledger) are properties over
generated agent sessions and over the real corpus.
"""

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinch import estimate_tokens, extract_text
from pinch.payback import CacheModel, Ledger, plan
from pinch.prefix import common_prefix_length
from routing.replay.corpus import corpus_dir
from tests.pinch.test_core_properties import agent_sessions, conversations
from tests.support.ci import missing
from tests.support.corpus import recorded_sessions
from tests.support.knobs import shipped_knobs

ANTHROPIC = CacheModel(read_multiplier=0.1, write_multiplier=1.25)
NO_PREMIUM = CacheModel(read_multiplier=0.1, write_multiplier=1.0)
KNOBS = shipped_knobs(budget_tokens=2000, min_payback=1.0, turns_ahead=1.0)


def tool_round(i, text, name="bash"):
    call_id = f"call_{i}"
    return [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": text},
    ]


def session(rounds, size=3000):
    messages = [{"role": "user", "content": "Fix the bug."}]
    for i in range(rounds):
        messages += tool_round(i, f"output {i}\n" + "plain words here\n" * (size // 17))
    messages.append({"role": "assistant", "content": "Done."})
    return messages


def requests(messages):
    for t, message in enumerate(messages):
        if t > 0 and message.get("role") == "assistant":
            yield messages[:t]


def replay_session(messages, knobs, cache, ledger_between=True):
    """(payload, ledger, stats) per request, the ledger carried from turn to turn or not."""
    ledger, memo, out = None, {}, []
    for request in requests(messages):
        payload, new_ledger, stats = plan(
            request, ledger if ledger_between else None, knobs, cache, memo=memo
        )
        ledger = new_ledger
        out.append((request, payload, new_ledger, stats))
    return out


def test_a_step_is_taken_once_the_session_is_over_budget_and_it_pays():
    turns = replay_session(session(30), KNOBS, ANTHROPIC)
    steps = [k for k, (_, _, _, stats) in enumerate(turns) if stats["step"]]
    assert steps, "a 30-round session of 1,000-token results must take a step"
    _, payload, ledger, stats = turns[-1]
    assert stats["pruned"] and stats["final_tokens"] < stats["original_tokens"]
    assert ledger.decided > 0 and ledger.steps


def test_no_step_when_the_session_cannot_pay_it_back():
    # Free cache reads: removing a cached token saves nothing on later turns,
    # and the rewrite (at least the removed tokens' worth) is never repaid.
    worthless = CacheModel(read_multiplier=0.0, write_multiplier=1.25, min_cacheable_tokens=0)
    turns = replay_session(session(30), KNOBS, worthless)
    # The first request (nothing cached yet) could step, but it is under budget.
    assert not any(stats["step"] for _, _, _, stats in turns)
    assert all(stats["tokens_saved"] == 0 for _, _, _, stats in turns)


def test_under_the_budget_the_callers_list_comes_back():
    messages = session(2, size=300)
    payload, ledger, stats = plan(messages, None, KNOBS, ANTHROPIC)
    assert payload is messages
    assert stats["pruned"] is False and ledger.decided == 0


def test_a_ledger_that_does_not_match_the_messages_is_rebuilt():
    messages = session(30)
    fresh = plan(messages, None, KNOBS, ANTHROPIC)
    forged = Ledger(length=10, decided=3, kept=(2,), steps=(5,), digest="not-these-messages")
    assert plan(messages, forged, KNOBS, ANTHROPIC)[:2] == fresh[:2]


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "",
        "garbage",
        "[1,2]",
        '{"a": 1}',
        b"\xff",
        "[1,2,[x],[],1]",
        # Round two's form (no cold requests, no time): rebuilt, to the same decisions.
        '[40,7,[3,9],[20,33],"abab"]',
        # Before the bank (no ``earned``): rebuilt too.
        '[40,7,[3,9],[20,33],"abab",[33],1700000000.5]',
        # Before the baseline (no ``baseline``, what the requests cost sent whole): rebuilt.
        '[40,7,[3,9],[20,33],"abab",[33],1700000000.5,-12.5]',
        # A bank no replay could reach.
        '[40,7,[3,9],[20,33],"abab",[33],1700000000.5,Infinity,0]',
        '[40,7,[3,9],[20,33],"abab",[33],1700000000.5,0,NaN]',
    ],
)
def test_an_unreadable_stored_ledger_reads_as_absent(raw):
    assert Ledger.from_json(raw) is None


def test_a_ledger_survives_its_json_form():
    ledger = Ledger(
        40,
        7,
        (3, 9),
        (20, 33),
        "ab" * 16,
        cold=(33,),
        at=1_700_000_000.5,
        earned=-1234.56789,
        baseline=98765.4321,
    )
    assert Ledger.from_json(ledger.as_json()) == ledger


def assert_promises(turns, knobs, cache):
    """Everything a session of plan() calls must hold, request after request."""
    previous = None
    for request, payload, ledger, stats in turns:
        assert len(payload) == len(request)
        for before, after in zip(request, payload):
            if after is before:
                continue
            # Only tool results change, into a string, with their pairing intact.
            assert before["role"] == "tool" and after["role"] == "tool"
            assert after.get("tool_call_id") == before.get("tool_call_id")
            assert isinstance(after["content"], str)
            assert len(after["content"]) <= len(extract_text(before))
        assert stats["final_tokens"] == sum(estimate_tokens(extract_text(m)) for m in payload)
        if previous is not None:
            old_request, old_payload, old_ledger, _ = previous
            assert ledger.decided >= old_ledger.decided
            assert set(old_ledger.kept) <= set(ledger.kept)
            match = common_prefix_length(old_payload, payload)
            if not stats["step"]:
                # Between steps the payload only grows at its end.
                assert match == len(old_payload)
            else:
                # A step changes only results decided at that step: never one
                # compressed or kept before.
                decided_before = set(i for i, m in enumerate(request) if m.get("role") == "tool")
                changed = [i for i in range(len(old_payload)) if old_payload[i] != payload[i]]
                earlier = sorted(decided_before)[: old_ledger.decided]
                assert not set(changed) & set(earlier)
            # Nothing before the last turn's stable prefix ever changes: it is
            # where a provider caching at breakpoints was told it may cache.
            stable = previous[3]["stable_prefix"]
            assert payload[:stable] == old_payload[:stable]
            # ... and this turn reads where the last one wrote: that much is intact.
            read_at = stats["stable_prefix_before"]
            assert payload[:read_at] == old_payload[:read_at]
        previous = (request, payload, ledger, stats)


@settings(max_examples=60, deadline=None)
@given(agent_sessions())
def test_generated_sessions_keep_every_promise(messages):
    knobs = shipped_knobs(budget_tokens=1500, max_summarize_chars=3000, protected_max_chars=6000)
    snapshot = copy.deepcopy(messages)
    turns = replay_session(messages, knobs, ANTHROPIC)
    assert messages == snapshot
    assert_promises(turns, knobs, ANTHROPIC)


@settings(max_examples=40, deadline=None)
@given(agent_sessions())
def test_without_a_ledger_every_request_gets_the_same_payload(messages):
    knobs = shipped_knobs(budget_tokens=1500, max_summarize_chars=3000)
    carried = replay_session(messages, knobs, NO_PREMIUM)
    rebuilt = replay_session(messages, knobs, NO_PREMIUM, ledger_between=False)
    for (_, with_ledger, ledger, _), (_, without, rebuilt_ledger, _) in zip(carried, rebuilt):
        assert with_ledger == without
        assert ledger == rebuilt_ledger


@pytest.mark.parametrize("recorded", recorded_sessions())
def test_every_real_session_keeps_every_promise_and_rebuilds_alike(recorded):
    if recorded is None:
        missing(f"the shared corpus at {corpus_dir()} (set CORPUS_DIR)")
    knobs = shipped_knobs()
    turns = replay_session(recorded.messages, knobs, ANTHROPIC)
    assert_promises(turns, knobs, ANTHROPIC)
    # A new worker with no state, at the last request, sends the same payload.
    request, payload, ledger, _ = turns[-1]
    fresh_payload, fresh_ledger, _ = plan(request, None, knobs, ANTHROPIC)
    assert fresh_payload == payload
    assert fresh_ledger == ledger


@settings(max_examples=150, deadline=None)
@given(conversations())
def test_hostile_shapes_never_raise_and_only_tool_results_change(messages):
    knobs = shipped_knobs(budget_tokens=500, max_summarize_chars=3000, protected_max_chars=3000)
    snapshot = copy.deepcopy(messages)
    payload, ledger, stats = plan(messages, None, knobs, ANTHROPIC)
    assert messages == snapshot
    assert len(payload) == len(messages)
    for before, after in zip(messages, payload):
        if after is not before:
            assert before.get("role") == "tool"
    again, rebuilt, _ = plan(messages, Ledger.from_json(ledger.as_json()), knobs, ANTHROPIC)
    assert again == payload and rebuilt == ledger


def replay_with_gaps(messages, knobs, cache, cold_at):
    """Like replay_session, the requests at the positions in ``cold_at`` planned cold."""
    ledger, memo, out = None, {}, []
    for k, request in enumerate(requests(messages)):
        payload, ledger, stats = plan(request, ledger, knobs, cache, memo=memo, cold=k in cold_at)
        out.append((request, payload, ledger, stats))
    return out


def test_a_cold_cache_takes_the_step_a_warm_one_refuses():
    strict = shipped_knobs(budget_tokens=2000, min_payback=1000.0)
    warm = replay_session(session(30), strict, ANTHROPIC)
    assert not any(stats["step"] for _, _, _, stats in warm[1:])
    cold = replay_with_gaps(session(30), strict, ANTHROPIC, cold_at={12})
    assert cold[12][3]["step"] and cold[12][2].cold == (cold[12][0].__len__(),)
    # Every result before the window is decided at once, for good.
    request, payload, ledger, stats = cold[12]
    assert stats["tokens_saved"] > 0
    assert all(later[2].decided >= ledger.decided for later in cold[12:])


@settings(max_examples=40, deadline=None)
@given(agent_sessions(), st.sets(st.integers(0, 40), max_size=6))
def test_a_cold_step_never_revisits_a_decision_and_rebuilds_alike(messages, cold_at):
    knobs = shipped_knobs(budget_tokens=1500, max_summarize_chars=3000, min_payback=5.0)
    turns = replay_with_gaps(messages, knobs, ANTHROPIC, cold_at)
    assert_promises(turns, knobs, ANTHROPIC)
    if turns:
        # A worker that knows only which requests were cold decides alike.
        request, payload, ledger, _ = turns[-1]
        rebuilt = plan(request, Ledger(cold=ledger.cold), knobs, ANTHROPIC)
        assert rebuilt[0] == payload
        assert rebuilt[1] == ledger


def priced(turns, cache, cold_at=frozenset()):
    """Per request: (with pinch, whole, with pinch had this request taken no step), in input tokens.

    As a provider bills a prefix cache: what the previous payload shares at its
    start is read, the rest written; a cold request (``cold_at``: positions)
    is written in full. The whole conversation shares all its previous request.
    """
    read, write = cache.read_multiplier, cache.write_multiplier
    out, before = [], None
    for k, (request, payload, _, stats) in enumerate(turns):
        sent = [estimate_tokens(extract_text(m)) for m in payload]
        whole = [estimate_tokens(extract_text(m)) for m in request]
        if before is None or k in cold_at:
            out.append((write * sum(sent), write * sum(whole), write * sum(sent)))
        else:
            old_request, old_payload = before
            shared = common_prefix_length(old_payload, payload)
            old = [estimate_tokens(extract_text(m)) for m in old_payload]
            with_pinch = read * sum(sent[:shared]) + write * sum(sent[shared:])
            whole_cost = read * sum(whole[: len(old_request)]) + write * sum(
                whole[len(old_request) :]
            )
            no_step = read * sum(old) + write * sum(whole[len(old_request) :])
            out.append((with_pinch, whole_cost, no_step if stats["step"] else with_pinch))
        before = (request, payload)
    return out


BANK_CACHES = st.sampled_from(
    [
        CacheModel(read_multiplier=0.1, write_multiplier=1.25, min_cacheable_tokens=0),
        CacheModel(read_multiplier=0.1, write_multiplier=1.0, min_cacheable_tokens=0),
        CacheModel(read_multiplier=0.25, write_multiplier=1.0, min_cacheable_tokens=0),
    ]
)


@settings(max_examples=60, deadline=None)
@given(agent_sessions(), BANK_CACHES, st.sets(st.integers(1, 40), max_size=4))
def test_the_bank_is_what_pinch_saved_and_no_unrepaid_step_is_stacked(messages, cache, cold_at):
    # No cap: a capped result differs from the whole one from the request it
    # arrives in, which the bank (steps only) does not count.
    knobs = shipped_knobs(
        budget_tokens=1500, max_summarize_chars=3000, protected_max_chars=None, min_payback=1.0
    )
    turns = replay_with_gaps(messages, knobs, cache, cold_at)
    earned = 0.0
    for (_, _, ledger, stats), (cost, whole, no_step) in zip(turns, priced(turns, cache, cold_at)):
        if stats["step"] and cost > no_step + 1e-6:
            # A step that costs more on its own request than none: only when
            # pinch was not in the red on the conversation before it.
            assert earned + (whole - no_step) >= -1e-6
        earned += whole - cost
        assert ledger.earned == pytest.approx(earned, abs=1e-6)
    # Whenever the conversation ends, pinch's loss is at most one step's net cost:
    # never two stacked (checked above); and a rebuild keeps the same bank.
    if turns:
        request, _, ledger, _ = turns[-1]
        assert plan(request, Ledger(cold=ledger.cold), knobs, cache)[1] == ledger


@settings(max_examples=60, deadline=None)
@given(
    agent_sessions(),
    BANK_CACHES,
    st.sets(st.integers(1, 40), max_size=4),
    st.sampled_from([0.0, 0.02, 0.1]),
)
def test_a_conversation_never_costs_more_than_the_allowed_share_over_pinch_off(
    messages, cache, cold_at, share
):
    # Had it ended after any request; at 0, never dearer at all. The cap is
    # off as above (it only ever removes tokens; the bound holds with it too).
    knobs = shipped_knobs(
        budget_tokens=1500,
        max_summarize_chars=3000,
        protected_max_chars=None,
        min_payback=1.0,
        max_loss_share=share,
    )
    turns = replay_with_gaps(messages, knobs, cache, cold_at)
    spent = whole_so_far = 0.0
    for (_, _, ledger, _), (cost, whole, _) in zip(turns, priced(turns, cache, cold_at)):
        spent += cost
        whole_so_far += whole
        assert ledger.baseline == pytest.approx(whole_so_far, abs=1e-6)
        assert spent <= (1 + share) * whole_so_far + 1e-6


def test_a_long_result_names_more_of_what_it_held_than_a_short_one():
    # 44 KB of file listing, then enough rounds to push it out of the window.
    listing = "\n".join(f"src/pkg_{i:04d}/module_{i:04d}.py  {i * 37} bytes" for i in range(1000))
    messages = [{"role": "user", "content": "Find the config loader."}]
    messages += tool_round(0, listing)
    for i in range(1, 8):
        messages += tool_round(i, f"output {i}\n" + "plain words here\n" * 200)
    messages.append({"role": "assistant", "content": "Done."})
    paths = [f"src/pkg_{i:04d}/module_{i:04d}.py" for i in range(1000)]

    def compressed(knobs):
        payload, _, stats = plan(messages, None, knobs, CacheModel(min_cacheable_tokens=10**9))
        assert 2 in stats["compressed"]
        return payload[2]["content"]

    flat = compressed(shipped_knobs(budget_tokens=2000, names_share=0.0))
    grown = compressed(shipped_knobs(budget_tokens=2000, names_share=0.04))
    named = [sum(1 for path in paths if path in text) for text in (flat, grown)]
    # 400 characters of lines and 250 of names hold a score of 26-character
    # paths; 4% of 44 KB of names holds some forty more, still a twentieth of the text.
    assert named[0] <= 25
    assert named[1] >= named[0] + 40
    assert len(grown) <= 400 + 0.04 * len(listing) + 100


def test_an_outsized_result_in_the_window_keeps_what_it_says_in_its_middle():
    # A subagent's 30 KB report as the latest result: the finding the agent
    # quotes next sits in the middle, where a head and a tail would cut it.
    prose = "The module reads its settings and writes the output file.\n"
    report = (
        prose * 200
        + "Bug: sync_raw_logs.redact_phone() matches UUID fragments as phone numbers.\n"
        + prose * 300
    )
    messages = [{"role": "user", "content": "Review the repository."}]
    messages += tool_round(0, report, name="Task")
    knobs = shipped_knobs(protected_max_chars=20_000)
    payload, _, stats = plan(messages, None, knobs, ANTHROPIC)
    capped = payload[2]["content"]
    assert stats["capped"] == [2]
    assert len(capped) <= 20_000
    assert "sync_raw_logs.redact_phone()" in capped
    # Chosen by content alone: the next request carries the same capped text.
    messages += tool_round(1, "ok")
    again, _, _ = plan(messages, None, knobs, ANTHROPIC)
    assert again[2]["content"] == capped
