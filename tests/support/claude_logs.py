"""Claude Code session logs (``~/.claude/projects/*/<id>.jsonl``), written as Claude Code does.

One record a line; an assistant message is one record per content block,
all with the message's ``id``; tool results come back in ``user`` records;
subagents write ``isSidechain`` records; other record types (snapshots,
summaries, queue operations) sit in between.
"""

from __future__ import annotations

import json
from pathlib import Path

SESSION = "0f3c2a9e-5b7d-4c1e-9a2b-6d8e4f1a7c35"


def record(kind: str, message: dict, at: str, **extra) -> dict:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/shop",
        "sessionId": SESSION,
        "version": "2.1.6",
        "type": kind,
        "message": message,
        "uuid": f"uuid-{at}",
        "timestamp": at,
        **extra,
    }


def assistant(message_id: str, block: dict, at: str, **extra) -> dict:
    message = {"id": message_id, "role": "assistant", "type": "message", "content": [block]}
    return record("assistant", message, at, **extra)


def results(*pairs: tuple[str, object], at: str) -> dict:
    content = [{"type": "tool_result", "tool_use_id": call, "content": out} for call, out in pairs]
    return record("user", {"role": "user", "content": content}, at)


def user(text: str, at: str, **extra) -> dict:
    return record("user", {"role": "user", "content": text}, at, **extra)


def review_session() -> list[dict]:
    """A short session: a caveat, a question, a read and a grep in one turn, a pause, an edit."""
    listing = "\n".join(f"{n:>6}\u2192def handler_{n}(request):" for n in range(1, 40))
    return [
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}},
        user(
            "<local-command-caveat>Caveat: ...</local-command-caveat>",
            "2026-01-10T10:00:00Z",
            isMeta=True,
        ),
        user("Why does checkout fail?", "2026-01-10T10:00:01Z"),
        assistant(
            "msg_1", {"type": "thinking", "thinking": "Look at the views."}, "2026-01-10T10:00:03Z"
        ),
        assistant("msg_1", {"type": "text", "text": "Reading the views."}, "2026-01-10T10:00:04Z"),
        assistant(
            "msg_1",
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "Read",
                "input": {"file_path": "shop/views.py"},
            },
            "2026-01-10T10:00:05Z",
        ),
        assistant(
            "msg_1",
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "Grep",
                "input": {"pattern": "checkout_total"},
            },
            "2026-01-10T10:00:06Z",
        ),
        results(("toolu_1", [{"type": "text", "text": listing}]), at="2026-01-10T10:00:07Z"),
        results(
            ("toolu_2", "shop/cart.py:12: def checkout_total(cart):"), at="2026-01-10T10:00:08Z"
        ),
        assistant(
            "sub_1",
            {"type": "text", "text": "A subagent's own turn."},
            "2026-01-10T10:00:09Z",
            isSidechain=True,
        ),
        {"type": "queue-operation", "operation": "dequeue", "timestamp": "2026-01-10T10:00:10Z"},
        # Ten minutes later: the next request finds the provider's cache cold.
        assistant(
            "msg_2",
            {
                "type": "tool_use",
                "id": "toolu_3",
                "name": "Edit",
                "input": {
                    "file_path": "shop/cart.py",
                    "old_string": "total = 0",
                    "new_string": "total = Decimal(0)",
                },
            },
            "2026-01-10T10:10:08Z",
        ),
        user("[Request interrupted by user]", "2026-01-10T10:10:09Z"),
        assistant(
            "msg_3",
            {"type": "text", "text": "Stopped; the edit was not made."},
            "2026-01-10T10:10:12Z",
        ),
    ]


def write_log(path: Path, records: list[dict], extra_lines: tuple[str, ...] = ()) -> Path:
    lines = [json.dumps(r) for r in records] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
