"""What one recall brings back of what pinch took out, and what its round trips cost (pure)."""

import pytest

from routing.replay.recalls import CALL_TOKENS, NONE, recalls_for, store_bytes

# Handles in message order, as pinch names them (pinch/recall.py).
STORE = {
    "r3": "ls src/app\nsrc/app/models.py\nsrc/app/views.py\n" + "x" * 300,
    "r7": "def load_config(path):\n    return parse_yaml(path)\n" + "y" * 600,
    "r9": "src/app/models.py:12: class OrderLine(Model):\n" + "z" * 90,
}


def size(handle):
    return len(STORE[handle]) // 3


def test_a_lost_reference_is_brought_back_by_recalling_the_newest_result_that_held_it():
    recalls = recalls_for(["src/app/models.py"], STORE, payload_tokens=5000)

    # r3 listed the file too, but r9 is where the agent last read the name.
    assert recalls.handles == ("r9",)
    assert recalls.recallable == 1
    assert recalls.recalled_tokens == size("r9")


def test_references_one_result_held_take_one_recall():
    recalls = recalls_for(["load_config", "parse_yaml"], STORE, payload_tokens=5000)

    assert recalls.handles == ("r7",)
    assert recalls.recallable == 2


def test_a_reference_no_changed_result_held_is_not_recallable():
    recalls = recalls_for(["frobnicate_all", "load_config"], STORE, payload_tokens=5000)

    assert recalls.recallable == 1
    assert recalls.handles == ("r7",)
    assert recalls_for(["frobnicate_all"], STORE, payload_tokens=5000) == NONE


@pytest.mark.parametrize(
    ("lost", "store"),
    [([], STORE), (["src/app/models.py"], {})],
    ids=["nothing lost", "recall off: no handles"],
)
def test_nothing_to_recall_costs_nothing(lost, store):
    assert recalls_for(lost, store, payload_tokens=5000) == NONE


def test_each_round_trip_reads_the_payload_again_and_writes_the_call_and_the_recalled_text():
    recalls = recalls_for(["OrderLine", "load_config"], STORE, payload_tokens=5000)

    assert recalls.handles == ("r9", "r7")
    first, second = size("r9"), size("r7")
    # The second round trip reads the payload and the first recall, now cached.
    assert recalls.cached_tokens == 5000 + (5000 + CALL_TOKENS + first)
    assert recalls.uncached_tokens == CALL_TOKENS + first + CALL_TOKENS + second
    assert recalls.recalled_tokens == first + second


def test_the_store_keeps_each_original_in_utf8_bytes():
    assert store_bytes({"r1": "héllo", "r2": "abc"}) == {"r1": 6, "r2": 3}
