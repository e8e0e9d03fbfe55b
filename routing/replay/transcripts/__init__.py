"""Agents' own session logs as replayable sessions: what pinch would do on your traffic.

``pinch_replay`` reads these files beside the corpus format
(``routing.replay.corpus``), so a user measures pinch on the sessions they actually
ran, not only on ours. Two agents write one JSON record a line, and the
first record tells which wrote it:

* Claude Code, ``~/.claude/projects/<project>/<id>.jsonl``
  (``routing.replay.transcripts.claude_code``);
* Codex CLI, ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``, whose records
  carry a ``payload`` (``routing.replay.transcripts.codex``).

Each becomes the chat messages the router would have read from the agent's
live requests, with the time of each answer; a log with compactions becomes
one session per context window. Pure: no Django, no I/O beyond
the caller's lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from routing.replay.transcripts.claude_code import NO_RESULT, claude_code_sessions
from routing.replay.transcripts.codex import is_rollout, rollout_sessions

__all__ = ["NO_RESULT", "UNREADABLE", "looks_like_transcript", "transcript_sessions"]

# The note a log's first session carries when lines of it could not be read.
UNREADABLE = "unreadable line(s) skipped"


def looks_like_transcript(first_line: str) -> bool:
    """Whether a ``.jsonl`` file's first non-empty line is a record: an object with a ``type``."""
    try:
        record = json.loads(first_line)
    except (ValueError, RecursionError):  # nested past the parser's depth
        return False
    return isinstance(record, dict) and isinstance(record.get("type"), str)


def transcript_sessions(lines: Iterable[str]) -> list[dict[str, Any]]:
    """The corpus form (``messages``, ``meta``, ``assistant_times``) of a log's lines: one
    session per context window (a compaction starts the next), the first one first."""
    records, unreadable = [], 0
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # a line nested past the parser's depth too
            unreadable += 1
            continue
        if isinstance(record, dict):
            records.append(record)
    codex = bool(records) and is_rollout(records[0])
    sessions = rollout_sessions(records) if codex else claude_code_sessions(records)
    if unreadable:
        sessions[0]["meta"]["notes"].insert(0, f"{unreadable} {UNREADABLE}")
    return sessions
