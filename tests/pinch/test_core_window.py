"""trim_candidates: which tool results sit before the protected window.

Conversations are spelled one letter a message (s system, u user, a assistant,
t tool result) so each case reads as the shape it tests.
"""

import pytest

from pinch import trim_candidates

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
