"""The replay's quality table: exposure of compressed results beside the natural repeat rate."""

from routing.replay.corpus import Session
from routing.replay.quality import replay_quality, session_quality
from routing.replay.sessions import ReplayResult, TurnRecord
from tests.support.scripted_agent import tool_call


def call(call_id, path):
    return tool_call("read", call_id, path=path)


def session(name="s.json", agent="Test Agent 1.0"):
    messages = [{"role": "user", "content": "task"}]
    for k, path in enumerate(["a.py", "b.py", "c.py", "a.py"]):
        messages += [call(str(k), path), {"role": "tool", "tool_call_id": str(k), "content": path}]
    messages.append({"role": "assistant", "content": "done"})
    return Session(name, messages, meta={"agent": agent})


def test_a_repeat_of_what_the_previous_payload_compressed_is_an_exposure():
    s = session()
    # The request before the agent's second read of a.py (index 7) had a.py's result compressed.
    quality = session_quality(s, {7: [2]})
    assert (quality.refetches, quality.compressed_seen) == (1, 1)
    assert quality.whole_repeats == 0
    # With nothing compressed, the same repeat is natural.
    # Results seen before each newest message: 0, 0, 1, 2, 3.
    assert (quality.natural_repeats, quality.natural_seen) == (1, 6)
    assert quality.turns_per_task == [quality.requests]
    assert quality.stopped_mid_loop == 0


def test_replay_quality_groups_by_family_and_totals():
    sessions = [session("a.json"), session("b.json", "Other Agent 2")]
    record = TurnRecord(
        "a.json",
        7,
        0,
        0,
        compressed=[2],
        capped=[],
        relevance_used=False,
        prefix_match=0,
        previous_len=0,
    )
    families = replay_quality(sessions, ReplayResult(records=[record]))
    assert [f.name for f in families] == ["Test Agent", "Other Agent", "total"]
    assert families[0].refetches == 1
    assert families[1].refetches == 0
    assert families[-1].sessions == 2
    assert families[-1].natural_repeats == 2
