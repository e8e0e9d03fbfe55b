"""Claude Code's and Codex CLI's session logs read as replayable sessions (routing.replay)."""

import json

import pytest

from routing.replay.corpus import CorpusError, load_session, load_sessions
from routing.replay.transcripts import NO_RESULT
from tests.support.claude_logs import SESSION, assistant, review_session, user, write_log
from tests.support.codex_logs import (
    INSTRUCTIONS,
    call,
    line,
    notes_session,
    output,
    said,
    write_rollout,
)


def test_a_claude_code_log_becomes_the_messages_the_agent_sent(tmp_path):
    session = load_session(write_log(tmp_path / f"{SESSION}.jsonl", review_session()))

    roles = [(m["role"], m.get("tool_call_id")) for m in session.messages]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("tool", "toolu_1"),
        ("tool", "toolu_2"),
        ("assistant", None),
        ("tool", "toolu_3"),
        ("user", None),
        ("assistant", None),
    ]
    first = session.messages[1]
    # One message from its four records: the thinking block dropped, text and calls joined.
    assert first["content"] == "Reading the views."
    assert [c["function"]["name"] for c in first["tool_calls"]] == ["Read", "Grep"]
    assert json.loads(first["tool_calls"][1]["function"]["arguments"]) == {
        "pattern": "checkout_total"
    }
    assert session.messages[2]["content"].startswith("     1\u2192def handler_1(request):")
    assert session.messages[3]["content"] == "shop/cart.py:12: def checkout_total(cart):"
    # The edit was interrupted before a result: the call still gets exactly one.
    assert session.messages[5]["content"] == NO_RESULT
    # The caveat (meta), the subagent's turn, snapshots and queue records are not messages.
    text = json.dumps(session.messages)
    assert "Caveat" not in text and "subagent" not in text
    assert session.family == "Claude Code"
    assert session.name == f"{SESSION}.jsonl"


def test_the_time_of_each_assistant_message_is_kept_for_the_cold_gaps(tmp_path):
    session = load_session(write_log(tmp_path / "s.jsonl", review_session()))
    assert sorted(session.times) == [1, 4, 7]
    assert session.times[4] - session.times[1] == pytest.approx(604)


def test_unreadable_lines_are_skipped_and_noted(tmp_path):
    path = write_log(tmp_path / "s.jsonl", review_session(), extra_lines=("{not json",))
    session = load_session(path)
    assert len(session.messages) == 8
    assert session.meta["notes"] == ["1 unreadable line(s) skipped"]


def test_a_jsonl_file_that_is_not_a_session_log_is_an_error_naming_it(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('[1, 2, 3]\n{"type": "user"}\n')
    with pytest.raises(
        CorpusError, match="metrics.jsonl: not a Claude Code or Codex CLI session log"
    ):
        load_sessions([path])


def test_a_folder_of_logs_passes_over_subagent_and_empty_ones(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    write_log(folder / f"{SESSION}.jsonl", review_session())
    sidechain = [
        user("Explore the repository.", "2026-01-10T10:00:00Z", isSidechain=True),
        assistant(
            "s1", {"type": "text", "text": "Done."}, "2026-01-10T10:00:01Z", isSidechain=True
        ),
    ]
    write_log(folder / "agent-a17266e.jsonl", sidechain)
    (folder / "empty.jsonl").write_text("")
    corpus_file = {
        "meta": {"agent": "mini-swe-agent 1.0"},
        "messages": [
            {"role": "user", "content": "Fix it."},
            {"role": "assistant", "content": "Done."},
        ],
    }
    (folder / "001.json").write_text(json.dumps(corpus_file))

    sessions = load_sessions([folder])

    assert [s.name for s in sessions] == ["001.json", f"{SESSION}.jsonl"]
    assert [s.family for s in sessions] == ["mini-swe-agent", "Claude Code"]
    # Named on its own, a subagent's log loads as what it is: no request to replay.
    assert list(load_session(folder / "agent-a17266e.jsonl").turns()) == []


def test_a_codex_rollout_becomes_the_messages_codex_sent(tmp_path):
    path = write_rollout(tmp_path / "rollout-2026-12-03T10-00-00-01a2.jsonl", notes_session())

    session = load_session(path)

    roles = [(m["role"], m.get("tool_call_id")) for m in session.messages]
    assert roles == [
        ("system", None),  # the base instructions
        ("system", None),  # the developer message
        ("user", None),
        ("assistant", None),
        ("tool", "call_1"),
        ("assistant", None),
        ("tool", "call_2"),
        ("user", None),
        ("assistant", None),
    ]
    assert session.messages[0]["content"] == INSTRUCTIONS
    assert session.messages[4]["content"] == "build: green\ntests: 42 passed\n"
    # Interrupted by the user before its output: the call still gets exactly one result.
    assert session.messages[6]["content"] == NO_RESULT
    assert json.loads(session.messages[5]["tool_calls"][0]["function"]["arguments"]) == {
        "cmd": "wc -l notes.txt"
    }
    # The built-in tool's call and the stray output are left out, and said so.
    assert "stale" not in json.dumps(session.messages)
    assert session.meta == {
        "agent": "Codex CLI 0.171.0",
        "notes": ["2 item(s) a chat model is not sent left out"],
    }
    assert session.family == "Codex CLI"
    # Each answer's time is its first item's (the reasoning): the seven-minute gap shows.
    assert sorted(session.times) == [3, 5, 8]
    assert session.times[5] - session.times[3] == pytest.approx(421)


def test_after_a_codex_compaction_the_requests_start_from_the_history_it_left(tmp_path):
    summary = said("user", "Summary: notes.txt says the build is green.", "T")["payload"]
    compacted = {"message": "summary", "replacement_history": [summary]}
    records = [
        *notes_session(),
        line("compacted", compacted, "2026-12-03T11:00:00.000Z"),
        call("call_9", "git status", "2026-12-03T11:00:01.000Z"),
        output("call_9", "clean", "2026-12-03T11:00:02.000Z"),
        said("assistant", "All clean.", "2026-12-03T11:00:03.000Z"),
    ]
    path = write_rollout(tmp_path / "rollout-x.jsonl", records)

    first, second = load_sessions([path])

    assert (first.name, second.name) == ("rollout-x.jsonl", "rollout-x.jsonl#2")
    assert len(first.messages) == 9  # as without the compaction
    # The second window is what Codex sent after it: the instructions, the summary, the loop.
    assert [m["role"] for m in second.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert second.messages[1]["content"] == "Summary: notes.txt says the build is green."
    assert sorted(second.times) == [2, 4] and second.family == "Codex CLI"
    with pytest.raises(CorpusError, match="2 context windows"):
        load_session(path)


def test_after_a_claude_code_compaction_the_requests_start_from_its_summary(tmp_path):
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
    }
    records = [
        *review_session(),
        boundary,
        user(
            "This session is being continued from a previous conversation.",
            "T",
            isCompactSummary=True,
        ),
        assistant("msg_9", {"type": "text", "text": "Continuing."}, "2026-01-10T11:00:00Z"),
    ]
    first, second = load_sessions([write_log(tmp_path / "s.jsonl", records)])
    assert len(first.messages) == 8  # as without the compaction
    assert [m["role"] for m in second.messages] == ["user", "assistant"]
    assert second.messages[0]["content"].startswith("This session is being continued")
    assert second.name == "s.jsonl#2" and second.family == "Claude Code"


def test_codex_logs_filed_by_day_are_found_under_the_sessions_folder(tmp_path):
    sessions = tmp_path / "codex-home" / "sessions"
    for day in ("2026/12/02", "2026/12/03"):
        write_rollout(sessions / day / f"rollout-{day.replace('/', '-')}.jsonl", notes_session())

    found = load_sessions([sessions])

    assert [s.name for s in found] == ["rollout-2026-12-02.jsonl", "rollout-2026-12-03.jsonl"]
    assert {len(list(s.turns())) for s in found} == {3}
