"""Claude Code's own session logs as replayable sessions.

Claude Code writes every session to ``~/.claude/projects/<project>/<id>.jsonl``,
one JSON record a line. The records are put back into the Messages API turns
Claude Code sent, which become chat messages as the router reads Claude
Code's live requests (``routing.protocols.messages.inbound``):

* ``user`` and ``assistant`` records only; subagent records
  (``isSidechain``) and meta records (``isMeta``: command caveats, skill
  bodies) are left out, and so is every other record type (summaries,
  file-history snapshots, queue operations);
* an assistant message is written as one record per content block, all
  with the same ``message.id``: they are joined again (thinking blocks
  left out, as the chat messages leave them out); consecutive user records
  are one turn, its ``tool_result`` blocks first;
* a call with no recorded result is answered by a placeholder, so every
  call keeps exactly one result;
* the time of each assistant message becomes ``assistant_times``, so the
  replay finds the cold gaps;
* a compaction (a ``compact_boundary`` record) ends a context window: the
  requests after it start from its summary, so each window is a session of
  its own, as its prompt cache is.

Pure: no Django, no I/O beyond the caller's records.
"""

from __future__ import annotations

from typing import Any

from routing.protocols.messages.inbound import from_messages_request

NO_RESULT = "[no result recorded]"


def claude_code_sessions(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The corpus form (``messages``, ``meta``, ``assistant_times``) of a log's records:
    one session per context window, a compaction starting the next."""
    builders = [_Builder()]
    for record in records:
        boundary = record.get("type") == "system" and record.get("subtype") == "compact_boundary"
        if boundary and not record.get("isSidechain"):  # a subagent's own compaction is its own
            builders.append(_Builder())
        else:
            builders[-1].add(record)
    return [builder.session() for builder in builders]


class _Builder:
    """The Messages API turns so far, and the calls still waiting for their result."""

    def __init__(self) -> None:
        self.turns: list[dict[str, Any]] = []
        self.times: list[str | None] = []  # one per assistant turn
        self.version: str | None = None
        self.pending: list[str] = []
        self.last_id: str | None = None

    def session(self) -> dict[str, Any]:
        self.answer_pending()
        body = {"model": "replay", "messages": self.turns}
        messages = from_messages_request(body, count_only=True)[0]["messages"]
        assistants = [t for t, message in enumerate(messages) if message["role"] == "assistant"]
        times = zip(assistants, self.times, strict=True)
        return {
            "meta": {"agent": f"Claude Code {self.version or ''}".strip(), "notes": []},
            "messages": messages,
            "assistant_times": {str(t): at for t, at in times if at is not None},
        }

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
        # Thinking is dropped, as the chat messages drop it: a record of it alone adds nothing.
        blocks = _blocks(message.get("content"), ("text", "tool_use"))
        if not blocks:
            return
        same = message.get("id") is not None and message.get("id") == self.last_id
        if not (same and self.turns[-1]["role"] == "assistant"):
            self.answer_pending()
            self.turns.append({"role": "assistant", "content": []})
            self.times.append(timestamp if isinstance(timestamp, str) else None)
            self.last_id = message.get("id")
        self.turns[-1]["content"] += blocks
        self.pending += [str(b.get("id")) for b in blocks if b["type"] == "tool_use"]

    def _user(self, content: Any) -> None:
        blocks = []
        for block in _blocks(content, ("text", "image", "tool_result")):
            if block["type"] != "tool_result":
                blocks.append(block)
            elif block.get("tool_use_id") in self.pending:
                self.pending.remove(block["tool_use_id"])
                blocks.append(block)
        if blocks:
            self._user_turn().extend(blocks)

    def _user_turn(self) -> list[dict[str, Any]]:
        """The content of the last turn when it is the user's; else of a new user turn."""
        if not self.turns or self.turns[-1]["role"] != "user":
            self.turns.append({"role": "user", "content": []})
            self.last_id = None
        return self.turns[-1]["content"]

    def answer_pending(self) -> None:
        """Close the open calls: a call whose result was never recorded gets the placeholder."""
        if self.pending:
            self._user_turn().extend(
                {"type": "tool_result", "tool_use_id": call_id, "content": NO_RESULT}
                for call_id in self.pending
            )
        self.pending = []


def _blocks(content: Any, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """The blocks of ``kinds`` in a record's content (a string is one text block)."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}] if content.strip() else []
    if not isinstance(content, list):
        return []
    return [
        b
        for b in content
        if isinstance(b, dict)
        and b.get("type") in kinds
        and (b["type"] != "text" or isinstance(b.get("text"), str))
    ]
