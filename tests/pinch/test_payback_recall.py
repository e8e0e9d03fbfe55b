"""What a recall teaches the payback planner: a result the model needed back is sent whole
from then on; with the decisions the ledger holds, nothing else in the payload moves; its
savings are no longer counted; one recalled before its fate is decided is kept."""

from hypothesis import given, settings
from hypothesis import strategies as st

from pinch.payback import plan
from tests.pinch.test_payback import ANTHROPIC, KNOBS, requests, session

LONG = session(20, size=6000)
REQUEST = list(requests(LONG))[-1]


# The decisions up to the request, as the conversation's ledger holds them.
_, DECIDED, _ = plan(REQUEST, None, KNOBS, ANTHROPIC)


def compressed_now(recalled=frozenset(), ledger=DECIDED):
    return plan(REQUEST, ledger, KNOBS, ANTHROPIC, recalled=recalled)


def test_a_recalled_result_is_sent_whole_and_the_rest_as_before():
    payload, _, stats = compressed_now()
    assert len(stats["compressed"]) >= 3
    recalled = stats["compressed"][1]
    restored, _, after = compressed_now(frozenset({recalled}))
    assert restored[recalled] == REQUEST[recalled]
    assert recalled not in after["compressed"]
    assert [m for i, m in enumerate(restored) if i != recalled] == [
        m for i, m in enumerate(payload) if i != recalled
    ]


def test_a_recalled_result_no_longer_counts_as_saved():
    _, _, stats = compressed_now()
    _, _, after = compressed_now(frozenset(stats["compressed"][:2]))
    assert after["final_tokens"] > stats["final_tokens"]
    assert after["original_tokens"] == stats["original_tokens"]


def test_a_result_recalled_before_it_is_decided_is_kept_when_it_is():
    _, _, stats = compressed_now()
    late = stats["compressed"][0]
    # No ledger: the decisions are made again, this one knowing the recall.
    _, ledger, _ = compressed_now(frozenset({late}), ledger=None)
    assert late in ledger.kept


@settings(max_examples=30, deadline=None)
@given(
    picks=st.sets(st.integers(-3, len(REQUEST) + 50), max_size=6),
)
def test_recalls_change_only_the_recalled_results_and_ignore_what_names_none(picks):
    payload, _, _ = compressed_now()
    restored, _, _ = compressed_now(frozenset(picks))
    assert len(restored) == len(REQUEST)
    for i, (before, after) in enumerate(zip(payload, restored)):
        if i in picks and REQUEST[i]["role"] == "tool":
            # Sent whole, or capped as a result kept for good is.
            assert len(after["content"]) >= len(before["content"])
        else:
            assert after == before
