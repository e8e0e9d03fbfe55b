"""The router's prompt measure: at least one token a non-empty message, plus the API's overhead.

pinch's own estimate stays characters / 3 (its contract); only the measure the
context window and the price see adds the floor and the overhead.
"""

import pytest

from pinch import estimate_tokens, message_tokens
from routing.selection import measure_prompt_tokens, remeasured


def user(content):
    return {"role": "user", "content": content}


@pytest.mark.parametrize(
    "messages, tools, measured",
    [
        ([user("hi")], None, 1 + 3 + 3),  # "hi" is 0 at characters / 3
        ([user("h")], None, 1 + 3 + 3),
        ([user("")], None, 0 + 3 + 3),  # nothing to count but the message itself
        ([user("x" * 300)], None, 100 + 3 + 3),
        ([user("hi"), {"role": "assistant", "content": "ok"}, user("hi")], None, 3 * 4 + 3),
        (
            [{"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}],
            None,
            0 + 3 + 3,
        ),
        ([user([{"type": "text", "text": "abcdef"}])], None, 2 + 3 + 3),
        ([user("hi")], [{"type": "function", "function": {"name": "f"}}], 7 + 16),
    ],
)
def test_the_measure_counts_every_message(messages, tools, measured):
    assert measure_prompt_tokens(messages, tools) == measured


def test_pinchs_estimate_is_unchanged():
    assert estimate_tokens("hi") == 0
    assert estimate_tokens("x" * 300) == 100


def test_a_payload_pinch_changed_measures_as_a_whole_measure_of_it_while_reading_only_its_changes():
    before = [user("x" * 3000), {"role": "tool", "tool_call_id": "c", "content": "y" * 900}]
    before += [user("hi"), {"role": "assistant", "content": "ok"}]
    after = list(before)
    after[1] = {"role": "tool", "tool_call_id": "c", "content": "[ls: result omitted]"}
    after[2] = user("")
    measured = measure_prompt_tokens(before, None)
    read = []

    class Watched(dict):
        def get(self, key, default=None):
            read.append(self)
            return super().get(key, default)

    watched = [Watched(m) for m in before]
    after = [watched[i] if after[i] is before[i] else after[i] for i in range(len(after))]
    whole = measure_prompt_tokens(after, None)
    read.clear()
    assert remeasured(measured, watched, after) == whole
    assert {id(m) for m in read} == {id(watched[1]), id(watched[2])}
    # With the sizes the first measure summed, the messages replaced are not read again,
    # but for "hi" (0 tokens by its characters: asked whether it holds text at all).
    read.clear()
    sizes = [message_tokens(m) for m in before]
    assert remeasured(measured, watched, after, sizes) == whole
    assert {id(m) for m in read} == {id(watched[2])}
    assert remeasured(measured, before, after[:-1]) is None
