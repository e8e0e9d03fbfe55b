"""Claude Code's own session logs as replayable sessions: what pinch would do on your traffic.

Claude Code writes every session to ``~/.claude/projects/<project>/<id>.jsonl``,
one JSON record a line. ``pinch_replay`` reads those files beside the
corpus format (``routing.corpus``), so a user measures pinch on the
sessions they actually ran, not only on ours. The records become the
corpus's chat-completions messages by the rules the corpus README gives
for 101-103, which came from such logs:

* ``user`` and ``assistant`` records only; subagent records
  (``isSidechain``) and meta records (``isMeta``: command caveats, skill
  bodies) are left out, and so is every other record type (summaries,
  file-history snapshots, queue operations);
* an assistant message is written as one record per content block, all
  with the same ``message.id``: they are joined again. Its ``text`` blocks
  are its content, its ``tool_use`` blocks its ``tool_calls``; thinking
  blocks are dropped, as in the corpus;
* a ``tool_result`` block becomes a ``tool`` message for its call (its
  text parts; images are dropped); a call with no recorded result is
  answered by a placeholder, so every call keeps exactly one result;
* the time of each assistant message becomes ``assistant_times``, so the
  replay finds the cold gaps.

Pure: no Django, no I/O beyond the caller's lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

NO_RESULT = "[no result recorded]"


def looks_like_transcript(first_line: str) -> bool:
    """Whether a ``.jsonl`` file's first non-empty line is a record: an object with a ``type``."""
    try:
        record = json.loads(first_line)
    except ValueError:
        return False
    return isinstance(record, dict) and isinstance(record.get("type"), str)


def transcript_session(lines: Iterable[str]) -> dict[str, Any]:
    """The corpus form (``messages``, ``meta``, ``assistant_times``) of a transcript's lines."""
    builder = _Builder()
    unreadable = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            unreadable += 1
            continue
        if isinstance(record, dict):
            builder.add(record)
    builder.answer_pending()
    notes = [f"{unreadable} unreadable line(s) skipped"] if unreadable else []
    agent = f"Claude Code {builder.version}" if builder.version else "Claude Code"
    return {
        "meta": {"agent": agent, "notes": notes},
        "messages": builder.messages,
        "assistant_times": builder.times,
    }


class _Builder:
    """The messages so far, and the calls still waiting for their result."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.times: dict[str, str] = {}
        self.version: str | None = None
        self.pending: list[str] = []
        self.last_id: str | None = None

    def add(self, record: dict[str, Any]) -> None:
        if record.get("isSidechain") or record.get("isMeta"):
            return
        message = record.get("message")
        if not isinstance(message, dict):
            return
        if isinstance(record.get("version"), str):
            self.version = self.version or record["version"]
        if record.get("type") == "assistant":
            self._assistant(message, record.get("timestamp"))
        elif record.get("type") == "user":
            self._user(message.get("content"))

    def _assistant(self, message: dict[str, Any], timestamp: Any) -> None:
        blocks = _blocks(message.get("content"))
        text = "\n".join(b["text"] for b in blocks if b.get("type") == "text" and b.get("text"))
        calls = [_call(b) for b in blocks if b.get("type") == "tool_use"]
        if not text and not calls:
            return  # thinking only
        same = message.get("id") is not None and message.get("id") == self.last_id
        if same and self.messages[-1]["role"] == "assistant":
            joined = self.messages[-1]
            if text:
                joined["content"] = f"{joined['content']}\n{text}" if joined["content"] else text
        else:
            self.answer_pending()
            joined = {"role": "assistant", "content": text}
            self.messages.append(joined)
            if isinstance(timestamp, str):
                self.times[str(len(self.messages) - 1)] = timestamp
            self.last_id = message.get("id")
        if calls:
            joined.setdefault("tool_calls", []).extend(calls)
            self.pending += [call["id"] for call in calls]

    def _user(self, content: Any) -> None:
        if isinstance(content, str):
            if content.strip():
                self._say(content)
            return
        blocks = _blocks(content)
        results = [b for b in blocks if b.get("type") == "tool_result"]
        for block in results:
            call_id = block.get("tool_use_id")
            if call_id in self.pending:
                self.pending.remove(call_id)
                result = _text(block.get("content"))
                self.messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
        text = _text(blocks)
        if text.strip() and not results:
            self._say(text)

    def _say(self, text: str) -> None:
        self.answer_pending()
        self.messages.append({"role": "user", "content": text})
        self.last_id = None

    def answer_pending(self) -> None:
        """Close the open calls: a call whose result was never recorded gets the placeholder."""
        for call_id in self.pending:
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": NO_RESULT})
        self.pending = []


def _call(block: dict[str, Any]) -> dict[str, Any]:
    """A ``tool_use`` block as a chat-completions tool call (arguments as JSON text)."""
    arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
    return {
        "id": str(block.get("id")),
        "type": "function",
        "function": {"name": str(block.get("name")), "arguments": arguments},
    }


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _text(content: Any) -> str:
    """The text parts of a block list (or the string itself), newline-joined."""
    if isinstance(content, str):
        return content
    texts = [b.get("text") for b in _blocks(content) if b.get("type") == "text"]
    return "\n".join(text for text in texts if isinstance(text, str))
