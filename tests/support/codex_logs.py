"""Codex CLI session logs (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``), as Codex writes them.

One record a line, ``{"timestamp", "type", "payload"}``: the session's
metadata first (with Codex's base instructions), then the Responses API items
it sent and received (``response_item``) among its own events, turn contexts
and usage records, which a replay has no use for. The shapes are those Codex
0.171.0 wrote in tests/routing/test_codex_cli.py.
"""

from __future__ import annotations

import json
from pathlib import Path

INSTRUCTIONS = "You are a coding agent running in the Codex CLI."


def line(kind: str, payload: dict, at: str) -> dict:
    return {"timestamp": at, "type": kind, "payload": payload}


def item(payload: dict, at: str) -> dict:
    return line("response_item", payload, at)


def said(role: str, text: str, at: str) -> dict:
    part = "output_text" if role == "assistant" else "input_text"
    return item({"type": "message", "role": role, "content": [{"type": part, "text": text}]}, at)


def call(call_id: str, cmd: str, at: str) -> dict:
    arguments = json.dumps({"cmd": cmd})
    payload = {"type": "function_call", "name": "exec_command", "arguments": arguments}
    return item({**payload, "call_id": call_id}, at)


def output(call_id: str, text: str, at: str) -> dict:
    return item({"type": "function_call_output", "call_id": call_id, "output": text}, at)


def notes_session() -> list[dict]:
    """A task, two commands (the second interrupted before its output), a pause, an answer."""
    meta = {
        "id": "01a23b82-b88e-75b1-8f05-03d1c55c1c1b",
        "cli_version": "0.171.0",
        "originator": "codex_exec",
        "base_instructions": {"text": INSTRUCTIONS},
    }
    return [
        line("session_meta", meta, "2026-12-03T10:00:00.000Z"),
        said("developer", "<permissions instructions>", "2026-12-03T10:00:00.100Z"),
        line("turn_context", {"model": "gpt-5.5"}, "2026-12-03T10:00:00.200Z"),
        said("user", "What does notes.txt say?", "2026-12-03T10:00:00.300Z"),
        line("event_msg", {"type": "task_started"}, "2026-12-03T10:00:00.310Z"),
        item(
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
            "2026-12-03T10:00:01.000Z",
        ),
        call("call_1", "cat notes.txt", "2026-12-03T10:00:01.500Z"),
        line("token_usage_record", {"input_tokens": 9907}, "2026-12-03T10:00:01.600Z"),
        output("call_1", "build: green\ntests: 42 passed\n", "2026-12-03T10:00:01.700Z"),
        # A built-in tool's call: Codex's own, never sent to a chat model.
        item({"type": "web_search_call", "status": "completed"}, "2026-12-03T10:00:02.000Z"),
        call("call_2", "wc -l notes.txt", "2026-12-03T10:07:02.000Z"),
        # An output of no call of this log (a resumed session's): nothing to answer.
        output("call_0", "stale", "2026-12-03T10:07:02.100Z"),
        said("user", "Stop, just answer.", "2026-12-03T10:07:03.000Z"),
        said("assistant", "notes.txt: the build is green.", "2026-12-03T10:07:04.000Z"),
    ]


def write_rollout(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path
