"""What recall adds is on pinch's books (pinch/payback.py): the note on each shortened result
and the round trips of the model's recalls.

Properties over generated agent sessions, under the three price models the
replay reports: the ledger's bank is what pinch saved the conversation, the
notes and the recalls paid for counted, request by request; no step to be
repaid is taken while the recalls have left pinch in the red; and no step
leaves the conversation, recalls included, past the allowed share of what
it would have cost sent whole.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinch import estimate_tokens, extract_text
from pinch.payback import Ledger, book_recalls, plan
from pinch.recall import round_trips, with_handles
from tests.pinch.test_core_properties import agent_sessions
from tests.pinch.test_payback import ANTHROPIC, BANK_CACHES, priced, requests, tool_round
from tests.support.knobs import shipped_knobs

# No cap: a capped result differs from the whole one from the request it
# arrives in, which the bank (steps only) does not count. No settling: the
# generated sessions are short, and the properties are about every step.
KNOBS = shipped_knobs(
    budget_tokens=1500,
    max_summarize_chars=3000,
    protected_max_chars=None,
    min_payback=1.0,
    settle_turns=0,
)


def noted_replay(messages, knobs, cache, recall_at=frozenset()):
    """(request, payload as sent with its notes, ledger, stats, what its recalls cost) per
    request; at the positions in ``recall_at`` the model recalls the oldest result pinch
    compressed, and the round trip is booked on the ledger the next request is planned by."""
    ledger, memo, out = None, {}, []
    read, write = cache.read_multiplier, cache.write_multiplier
    for k, request in enumerate(requests(messages)):
        payload, ledger, stats = plan(request, ledger, knobs, cache, memo=memo, notes=True)
        payload, _, _ = with_handles(request, payload, stats.get("compressed", []))
        recall_cost = 0.0
        if k in recall_at and stats.get("compressed"):
            sent = sum(estimate_tokens(extract_text(m)) for m in payload)
            sizes = [estimate_tokens(extract_text(request[stats["compressed"][0]]))]
            cached, written = round_trips(sent, sizes)
            recall_cost = read * cached + write * written
            ledger = book_recalls(ledger, cache, sent, sizes)
        out.append((request, payload, ledger, stats, recall_cost))
    return out


def test_a_result_is_compressed_only_when_its_noted_form_is_shorter():
    # Results a little longer than their placeholder ("[bash: result omitted]",
    # 22 characters) and shorter than it with a note: compressed without notes,
    # kept with them (compressing would send more). A long task puts it over budget.
    messages = [{"role": "user", "content": "Fix the bug. " + "context " * 800}]
    for i in range(30):
        messages += tool_round(i, f"exit status 0, {i:02d} files read")
    messages.append({"role": "assistant", "content": "Done."})
    request = list(requests(messages))[-1]

    _, _, bare = plan(request, None, KNOBS, ANTHROPIC, cold=True)
    payload, ledger, noted = plan(request, None, KNOBS, ANTHROPIC, cold=True, notes=True)

    assert bare["compressed"]
    assert "compressed" not in noted and payload == request
    assert set(bare["compressed"]) <= set(ledger.kept)


@settings(max_examples=60, deadline=None)
@given(agent_sessions(), BANK_CACHES, st.sets(st.integers(0, 40), max_size=4))
def test_the_bank_counts_the_notes_and_the_recalls(messages, cache, recall_at):
    turns = noted_replay(messages, cache=cache, knobs=KNOBS, recall_at=recall_at)
    costs = priced([t[:4] for t in turns], cache)
    saved = 0.0
    for (_, _, ledger, stats, recalled), (cost, whole, no_step) in zip(turns, costs):
        if stats["step"] and cost > no_step + 1e-6:
            # A step to be repaid: only when pinch, recalls counted, was not in the red.
            assert saved + (whole - no_step) >= -1e-6
        saved += whole - cost - recalled
        assert ledger.earned - ledger.recall_cost == pytest.approx(saved, abs=1e-6)
    if turns:
        # A rebuild counts every recall from the start, and keeps what they cost.
        request, _, ledger, _, _ = turns[-1]
        rebuilt = plan(request, Ledger(recall_cost=ledger.recall_cost), KNOBS, cache, notes=True)
        assert rebuilt[1].recall_cost == ledger.recall_cost


@settings(max_examples=60, deadline=None)
@given(
    agent_sessions(),
    BANK_CACHES,
    st.sets(st.integers(0, 40), max_size=4),
    st.sampled_from([0.0, 0.02, 0.1]),
)
def test_no_step_leaves_the_conversation_past_the_allowed_share_recalls_counted(
    messages, cache, recall_at, share
):
    knobs = shipped_knobs(**{**KNOBS.__dict__, "max_loss_share": share})
    turns = noted_replay(messages, knobs, cache, recall_at)
    costs = priced([t[:4] for t in turns], cache)
    spent = whole_so_far = 0.0
    for (_, _, _, stats, recalled), (cost, whole, no_step) in zip(turns, costs):
        spent += cost
        whole_so_far += whole
        if stats["step"] and cost > no_step + 1e-6:
            assert spent <= (1 + share) * whole_so_far + 1e-6
        # A recall is paid after the request is planned: the next step must carry it.
        spent += recalled
    if not recall_at:
        assert spent <= (1 + share) * whole_so_far + 1e-6
