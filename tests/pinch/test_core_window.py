"""trim_candidates: which tool results sit before the protected window.

Conversations are spelled one letter a message (s system, u user, a assistant,
t tool result) so each case reads as the shape it tests.
"""

import pytest

from pinch import prune_context, trim_candidates

_ROLES = {"s": "system", "u": "user", "a": "assistant", "t": "tool"}


def shape(letters: str) -> list[dict]:
    return [{"role": _ROLES[c], "content": f"{c}{i}"} for i, c in enumerate(letters.split())]


@pytest.mark.parametrize(
    ("letters", "turns", "results", "candidates"),
    [
        # 0 1 2 3 4 5 6 7 8 9 10
        ("s u a t u a t u a t", 4, None, []),
        ("s u a t u a t u a t", 3, None, []),
        ("s u a t u a t u a t", 2, None, [3]),
        ("s u a t u a t u a t", 1, None, [3, 6]),
        ("u a t a t a t a t a t", 4, None, []),
        ("u a t a t a t a t a t", 4, 2, [2, 4, 6]),
        ("u a t a t a t a t a t", 4, 5, []),
        ("u a t a t a t a t a t", 4, 9, []),
        # later of the two starts wins: the user rule here
        ("u a t t t u a t t t u a t", 1, 4, [2, 3, 4, 7, 8, 9]),
        # ... and the tool rule here
        ("u a t t t u a t t t u a t", 2, 2, [2, 3, 4, 7, 8]),
        ("u a t u a t", 1, None, [2]),
        ("", 4, 6, []),
        ("t t u t", 1, None, [0, 1]),
    ],
    ids=[
        "fewer-users-than-turns-protects-all",
        "three-turns-reach-the-first-user",
        "two-turns",
        "one-turn",
        "agent-loop-one-user-protects-all",
        "agent-loop-tool-rule-opens-the-window",
        "agent-loop-exactly-enough-tool-results",
        "agent-loop-too-few-tool-results",
        "user-rule-is-later",
        "tool-rule-is-later",
        "tool-results-of-the-current-turn-protected",
        "empty",
        "results-before-any-user",
    ],
)
def test_candidates_are_tool_results_before_the_protected_window(
    letters, turns, results, candidates
):
    assert trim_candidates(shape(letters), turns, results) == candidates


def test_keep_values_below_one_still_protect_the_latest_turn():
    messages = shape("u a t u a t")
    assert trim_candidates(messages, 0) == trim_candidates(messages, 1) == [2]
    assert trim_candidates(shape("u a t a t"), 4, 0) == trim_candidates(shape("u a t a t"), 4, 1)


def test_messages_that_are_not_dicts_are_neither_candidates_nor_turns():
    messages = [{"role": "user", "content": "q"}, None, {"role": "tool", "content": "r"}, "x"]
    messages += [{"role": "user", "content": "q2"}]
    assert trim_candidates(messages, 1) == [2]


# --- window_step: the tool-result rule in steps --------------------------------------------

#: ``u`` then ``a t`` ten times: tool result j (0-based) is message 2 + 2j.
TEN_RESULTS = "u" + " a t" * 10
#: 0 u, 1 a, 2-6 t, 7 u, 8 a, 9-11 t, 12 u, 13 a, 14 t: nine tool results, three users.
THREE_USERS = "u a t t t t t u a t t t u a t"


def results_at(letters: str, first: int, stop: int) -> list[int]:
    """Message indexes of tool results ``first`` to ``stop - 1``, counted from the start."""
    positions = [i for i, c in enumerate(letters.split()) if c == "t"]
    return positions[first:stop]


@pytest.mark.parametrize(
    ("letters", "turns", "results", "step", "candidates"),
    [
        # Ten results, keep 3: the window would start at result j = 7.
        (TEN_RESULTS, 4, 3, None, results_at(TEN_RESULTS, 0, 7)),
        (TEN_RESULTS, 4, 3, 1, results_at(TEN_RESULTS, 0, 7)),
        (TEN_RESULTS, 4, 3, 0, results_at(TEN_RESULTS, 0, 7)),
        (TEN_RESULTS, 4, 3, 2, results_at(TEN_RESULTS, 0, 6)),
        (TEN_RESULTS, 4, 3, 4, results_at(TEN_RESULTS, 0, 4)),
        (TEN_RESULTS, 4, 3, 7, results_at(TEN_RESULTS, 0, 7)),
        (TEN_RESULTS, 4, 3, 8, []),
        (TEN_RESULTS, 4, 3, 16, []),
        # No tool rule: nothing to quantize, the one user protects everything.
        (TEN_RESULTS, 4, None, 4, []),
        # Too few results for the tool rule: it protects everything, in steps or not.
        ("u a t a t", 4, 3, 4, []),
        # Parallel results count one by one: j = 9 - 2 = 7, in steps of 4 -> 4.
        ("u a t t t a t t t a t t t", 4, 2, 4, [2, 3, 4, 6]),
        # The user rule is later than the tool rule, with or without steps.
        (THREE_USERS, 1, 2, None, [2, 3, 4, 5, 6, 9, 10, 11]),
        (THREE_USERS, 1, 2, 4, [2, 3, 4, 5, 6, 9, 10, 11]),
        # The tool rule (j = 7, message 11) beats the second user (message 7) ...
        (THREE_USERS, 2, 2, None, [2, 3, 4, 5, 6, 9, 10]),
        # ... but in steps of 4 it starts at result 4 (message 6), and the user wins.
        (THREE_USERS, 2, 2, 4, [2, 3, 4, 5, 6]),
        (THREE_USERS, 2, 2, 8, [2, 3, 4, 5, 6]),
        # j = 9 - 1 = 8: a multiple of 4 starts where the plain rule does.
        (THREE_USERS, 2, 1, 4, [2, 3, 4, 5, 6, 9, 10, 11]),
    ],
    ids=[
        "none-is-the-plain-rule",
        "step-1-is-the-plain-rule",
        "step-below-1-counts-as-1",
        "step-2",
        "step-4-rounds-7-down-to-4",
        "step-7-divides-7",
        "step-8-rounds-down-to-nothing",
        "step-16",
        "no-tool-rule-nothing-to-quantize",
        "too-few-results",
        "parallel-results",
        "user-rule-later",
        "user-rule-later-with-steps",
        "tool-rule-later",
        "quantized-tool-rule-loses-to-the-user-rule",
        "quantized-to-zero-user-rule-wins",
        "multiple-of-the-step-unchanged",
    ],
)
def test_window_step_quantizes_the_tool_rule(letters, turns, results, step, candidates):
    messages = shape(letters)
    assert trim_candidates(messages, turns, results, window_step=step) == candidates


def test_candidates_stay_put_for_k_results_then_grow_by_k():
    # An agent adding one result a turn: at r results, keep 3, the plain window
    # starts at result r - 3; in steps of 4 at ((r - 3) // 4) * 4.
    keep, step = 3, 4
    counts = []
    for r in range(31):
        messages = shape("s u" + " a t" * r)
        plain = trim_candidates(messages, 4, keep)
        stepped = trim_candidates(messages, 4, keep, window_step=step)
        assert len(plain) == max(r - keep, 0)
        assert stepped == plain[: len(stepped)], "a prefix of the plain candidates"
        counts.append(len(stepped))

    assert counts == [0] * 3 + [n for n in range(0, 28, step) for _ in range(step)]
    changes = [(r, counts[r] - counts[r - 1]) for r in range(1, 31) if counts[r] != counts[r - 1]]
    assert changes == [(7, 4), (11, 4), (15, 4), (19, 4), (23, 4), (27, 4)]


@pytest.mark.parametrize("step", [None, 1])
def test_step_none_and_1_prune_exactly_as_before(step):
    messages = [{"role": "user", "content": "fix it"}]
    for i in range(12):
        messages.append({"role": "assistant", "content": f"call {i}"})
        messages.append({"role": "tool", "content": f"{i:02d} " + "x" * (500 + 900 * i)})
    knobs = {"budget_tokens": 100, "keep_last_tool_results": 3, "protected_max_chars": 3000}
    assert prune_context(messages, **knobs, window_step=step) == prune_context(messages, **knobs)


def test_with_steps_the_results_kept_back_are_protected_and_capped_like_the_window():
    # 10 results, keep 3, step 4: results 4-6 are held back from compression;
    # they are inside the protected window, so an outsized one is capped.
    messages = [{"role": "user", "content": "fix it"}]
    for i in range(10):
        messages.append({"role": "assistant", "content": f"call {i}"})
        messages.append({"role": "tool", "content": "y" * 5000})
    knobs = {"budget_tokens": 10, "keep_last_tool_results": 3, "protected_max_chars": 3000}

    _, plain = prune_context(messages, **knobs)
    _, stepped = prune_context(messages, **knobs, window_step=4)

    assert plain["compressed"] == [2 + 2 * j for j in range(7)]
    assert plain["capped"] == [2 + 2 * j for j in range(7, 10)]
    assert stepped["compressed"] == [2 + 2 * j for j in range(4)]
    assert stepped["capped"] == [2 + 2 * j for j in range(4, 10)]
