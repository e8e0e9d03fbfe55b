"""Agents' own session logs as replayable sessions: what pinch would do on your traffic.

``pinch_replay`` reads these files beside the corpus format
(``routing.corpus``), so a user measures pinch on the sessions they actually
ran, not only on ours. Two agents write one JSON record a line, and the
first record tells which wrote it:

* Claude Code, ``~/.claude/projects/<project>/<id>.jsonl``
  (``routing.transcripts.claude_code``);
* Codex CLI, ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``, whose records
  carry a ``payload`` (``routing.transcripts.codex``).

Each becomes the chat messages the router would have read from the agent's
live requests, with the time of each answer. Pure: no Django, no I/O beyond
the caller's lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from routing.transcripts.claude_code import NO_RESULT, claude_code_session
from routing.transcripts.codex import is_rollout, rollout_session

__all__ = ["NO_RESULT", "looks_like_transcript", "transcript_session"]


def looks_like_transcript(first_line: str) -> bool:
    """Whether a ``.jsonl`` file's first non-empty line is a record: an object with a ``type``."""
    try:
        record = json.loads(first_line)
    except ValueError:
        return False
    return isinstance(record, dict) and isinstance(record.get("type"), str)


def transcript_session(lines: Iterable[str]) -> dict[str, Any]:
    """The corpus form (``messages``, ``meta``, ``assistant_times``) of a log's lines."""
    records, unreadable = [], 0
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            unreadable += 1
            continue
        if isinstance(record, dict):
            records.append(record)
    codex = bool(records) and is_rollout(records[0])
    session = rollout_session(records) if codex else claude_code_session(records)
    if unreadable:
        session["meta"]["notes"].insert(0, f"{unreadable} unreadable line(s) skipped")
    return session
