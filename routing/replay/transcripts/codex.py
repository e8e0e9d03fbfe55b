"""Codex CLI's own session logs (rollouts) as replayable sessions.

Codex writes every session to
``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``, one record a line,
``{"timestamp", "type", "payload"}``. The ``response_item`` records are the
Responses API items Codex sent and received, in order; put back into one
``input`` (with the session's base instructions), they become chat messages
as the router reads Codex's live requests
(``routing.protocols.responses.inbound``):

* items of the kinds a chat model is sent (messages, function and custom
  tool calls and their outputs) are kept; reasoning is kept for the
  translator to drop, as it drops it live; others (a built-in tool's call,
  a snapshot) are left out and counted in the notes;
* a call with no recorded output is answered by a placeholder, so every
  call keeps exactly one result;
* the time of the first item of each answer becomes ``assistant_times``, so
  the replay finds the cold gaps;
* a compaction (``compacted``) ends a context window: the requests after
  it start from the history it left (its replacement items), so each window
  is a session of its own, as its prompt cache is.

Pure: no Django, no I/O beyond the caller's records.
"""

from __future__ import annotations

from typing import Any

from routing.protocols.responses.inbound import from_responses_request
from routing.replay.transcripts.claude_code import NO_RESULT

CALLS = ("function_call", "custom_tool_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")
ANSWER = ("reasoning", *CALLS)  # with an assistant message: what a model wrote
ROLES = ("user", "assistant", "system", "developer")


def is_rollout(record: dict[str, Any]) -> bool:
    """Whether a log's first record is Codex's (a ``payload`` beside the ``type``)."""
    return isinstance(record.get("payload"), dict)


def rollout_sessions(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The corpus form (``messages``, ``meta``, ``assistant_times``) of a rollout's records:
    one session per context window, a compaction starting the next."""
    instructions, version = None, None
    windows = [_Window()]
    for record in records:
        payload = record.get("payload")
        if not isinstance(payload, dict):
            continue
        if record.get("type") == "session_meta":
            version = payload.get("cli_version") or version
            instructions = _instructions(payload) or instructions
        elif record.get("type") == "compacted":
            windows.append(_Window())
            for item in _replacement(payload):
                windows[-1].add(item, None)
        elif record.get("type") == "response_item":
            windows[-1].add(payload, record.get("timestamp"))
    agent = f"Codex CLI {version}" if isinstance(version, str) else "Codex CLI"
    return [window.session(instructions, agent) for window in windows]


class _Window:
    """The items of one context window so far, and the calls still waiting for their output."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.times: list[Any] = []  # when each answer began
        self.pending: dict[str, str] = {}  # call_id -> the type of its output
        self.left_out = 0

    def add(self, payload: dict[str, Any], at: Any) -> None:
        item = _sendable(payload)
        if item is None or (item["type"] in OUTPUTS and item["call_id"] not in self.pending):
            self.left_out += 1  # nothing a chat model is sent, or an output of no call
            return
        if item["type"] in OUTPUTS:
            del self.pending[item["call_id"]]
        elif not _is_answer(item):
            self.answer_pending()
        elif not (self.items and _is_answer(self.items[-1])):
            self.times.append(at)
        if item["type"] in CALLS:
            self.pending[item["call_id"]] = OUTPUTS[CALLS.index(item["type"])]
        self.items.append(item)

    def answer_pending(self) -> None:
        """Close the open calls: a call whose output was never recorded gets the placeholder."""
        self.items += [
            {"type": output, "call_id": call, "output": NO_RESULT}
            for call, output in self.pending.items()
        ]
        self.pending.clear()

    def session(self, instructions: str | None, agent: str) -> dict[str, Any]:
        self.answer_pending()
        body: dict[str, Any] = {"model": "replay", "input": self.items}
        if instructions:
            body["instructions"] = instructions
        messages = from_responses_request(body)[0]["messages"] if self.items else []
        notes = [f"{self.left_out} item(s) a chat model is not sent left out"]
        return {
            "meta": {"agent": agent, "notes": notes if self.left_out else []},
            "messages": messages,
            "assistant_times": _times(messages, self.times),
        }


def _replacement(compacted: dict[str, Any]) -> list[Any]:
    """The history a compaction leaves for the next request: its replacement items, or
    (Codex before they were recorded) its summary as a user message."""
    history = compacted.get("replacement_history")
    if isinstance(history, list):
        return [item for item in history if isinstance(item, dict)]
    summary = compacted.get("message")
    return [{"type": "message", "role": "user", "content": summary}] if summary else []


def _instructions(meta: dict[str, Any]) -> str | None:
    base = meta.get("base_instructions")
    text = base.get("text") if isinstance(base, dict) else meta.get("instructions")
    return text if isinstance(text, str) else None


def _sendable(item: dict[str, Any]) -> dict[str, Any] | None:
    """The item as the translator takes it, or None for what a chat model is never sent."""
    kind = item.get("type")
    if kind == "message":
        return item if item.get("role") in ROLES else None
    if kind in CALLS:
        ok = isinstance(item.get("call_id"), str) and isinstance(item.get("name"), str)
        return item if ok else None
    if kind in OUTPUTS:
        return item if isinstance(item.get("call_id"), str) else None
    return item if kind == "reasoning" else None


def _is_answer(item: dict[str, Any]) -> bool:
    return item["type"] in ANSWER or item.get("role") == "assistant"


def _times(messages: list[dict[str, Any]], times: list[Any]) -> dict[str, Any]:
    """{index of each assistant message: its time}, when the answers line up one for one."""
    answers = [t for t, message in enumerate(messages) if message["role"] == "assistant"]
    if len(answers) != len(times):
        return {}
    return {str(t): at for t, at in zip(answers, times) if isinstance(at, str)}
