"""Message fingerprints and the common prefix of two turns' payloads."""

import hashlib
import json

import pytest

from pinch.prefix import common_prefix_length, message_fingerprints


def test_fingerprint_is_pinned_so_processes_and_hosts_agree():
    # Written by one worker and read by another (or another host, via Redis):
    # the definition is fixed. String content: blake2b-16 of the other fields'
    # canonical JSON, a NUL, then the text; any other message: of its canonical JSON.
    text = hashlib.blake2b('{"role":"user"}\0héllo'.encode(), digest_size=16).hexdigest()
    assert message_fingerprints([{"role": "user", "content": "héllo"}]) == [text]
    parts = [{"type": "text", "text": "hi"}]
    canonical = json.dumps(
        {"content": parts, "role": "user"}, sort_keys=True, separators=(",", ":")
    )
    other = hashlib.blake2b(canonical.encode(), digest_size=16).hexdigest()
    assert message_fingerprints([{"role": "user", "content": parts}]) == [other]
    assert len(text) == 32


def test_text_moved_between_content_and_other_fields_changes_the_fingerprint():
    a = {"role": "user", "content": "x", "name": "y"}
    b = {"role": "user", "content": "y", "name": "x"}
    c = {"role": "user", "content": '"name":"y"'}
    fingerprints = message_fingerprints([a, b, c])
    assert len(set(fingerprints)) == 3


def test_key_order_on_the_wire_does_not_change_the_fingerprint():
    a = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    b = {"content": "ok", "tool_call_id": "c1", "role": "tool"}
    assert message_fingerprints([a]) == message_fingerprints([b])


@pytest.mark.parametrize(
    "other",
    [
        {"role": "user", "content": "hi "},
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": ["hi"]},
        {"role": "user", "content": "hi", "name": "x"},
    ],
)
def test_any_difference_changes_the_fingerprint(other):
    assert message_fingerprints([{"role": "user", "content": "hi"}]) != message_fingerprints(
        [other]
    )


def test_one_fingerprint_per_message_in_order():
    messages = [{"role": "user", "content": str(i)} for i in range(5)]
    prints = message_fingerprints(messages)
    assert len(prints) == 5 and len(set(prints)) == 5
    assert message_fingerprints(messages[2:3]) == prints[2:3]


def test_lone_surrogates_and_non_json_values_get_fingerprints_of_their_own():
    odd = [{"role": "user", "content": "\ud800"}, {"role": "user", "content": {1}}]
    prints = message_fingerprints(odd)
    assert len(prints) == 2 and prints[0] != prints[1]
    assert prints[0] != message_fingerprints([{"role": "user", "content": "\ud801"}])[0]


@pytest.mark.parametrize(
    ("previous", "current", "length"),
    [
        ([], [], 0),
        ([], ["a"], 0),
        (["a", "b", "c"], ["a", "b", "c"], 3),
        (["a", "b", "c"], ["a", "x", "c"], 1),
        (["a", "b"], ["a", "b", "c", "d"], 2),
        (["a", "b", "c"], ["a", "b"], 2),
        (["x"], ["a"], 0),
    ],
    ids=["empty", "no-previous", "identical", "diverge", "grown", "shrunk", "first-differs"],
)
def test_common_prefix_counts_leading_equal_items(previous, current, length):
    assert common_prefix_length(previous, current) == length


def test_pruned_payloads_compare_through_their_fingerprints():
    turn1 = [{"role": "user", "content": "q"}, {"role": "tool", "content": "big"}]
    turn2 = [turn1[0], {"role": "tool", "content": "[bash: result omitted]"}, turn1[1]]
    assert common_prefix_length(message_fingerprints(turn1), message_fingerprints(turn2)) == 1


def test_a_rows_packed_fingerprints_take_four_characters_a_message_and_compare_alike():
    from pinch.prefix import packed, unpacked

    turn1 = [{"role": "user", "content": f"m{i}"} for i in range(400)]
    turn2 = [*turn1[:150], {"role": "user", "content": "rewritten"}, *turn1[151:]]
    row = packed(message_fingerprints(turn1))
    assert len(row) == 4 * 400 and row.isascii()
    again = unpacked(packed(message_fingerprints(turn2)))
    assert common_prefix_length(unpacked(row), again) == 150
