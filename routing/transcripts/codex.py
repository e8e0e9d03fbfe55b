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
* a compaction (``compacted``) is not followed: the replay keeps the whole
  history, so the requests after it are longer than the ones Codex sent, and
  the notes say how many there were.

Pure: no Django, no I/O beyond the caller's records.
"""

from __future__ import annotations

from typing import Any

from routing.protocols.responses.inbound import from_responses_request
from routing.transcripts.claude_code import NO_RESULT

CALLS = ("function_call", "custom_tool_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")
ANSWER = ("reasoning", *CALLS)  # with an assistant message: what a model wrote
ROLES = ("user", "assistant", "system", "developer")


def is_rollout(record: dict[str, Any]) -> bool:
    """Whether a log's first record is Codex's (a ``payload`` beside the ``type``)."""
    return isinstance(record.get("payload"), dict)


def rollout_session(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The corpus form (``messages``, ``meta``, ``assistant_times``) of a rollout's records."""
    items: list[dict[str, Any]] = []
    times: list[Any] = []
    pending: dict[str, str] = {}  # call_id -> the type of its output, still waiting
    instructions, version, left_out, compactions = None, None, 0, 0
    for record in records:
        payload = record.get("payload")
        if not isinstance(payload, dict):
            continue
        if record.get("type") == "session_meta":
            version = payload.get("cli_version") or version
            instructions = _instructions(payload) or instructions
        elif record.get("type") == "compacted":
            compactions += 1
        elif record.get("type") == "response_item":
            item = _sendable(payload)
            if item is None or (item["type"] in OUTPUTS and item["call_id"] not in pending):
                left_out += 1  # nothing a chat model is sent, or an output of no call
                continue
            if item["type"] in OUTPUTS:
                del pending[item["call_id"]]
            elif not _is_answer(item):
                _answer_pending(items, pending)
            elif not (items and _is_answer(items[-1])):
                times.append(record.get("timestamp"))
            if item["type"] in CALLS:
                pending[item["call_id"]] = OUTPUTS[CALLS.index(item["type"])]
            items.append(item)
    _answer_pending(items, pending)
    body: dict[str, Any] = {"model": "replay", "input": items}
    if isinstance(instructions, str) and instructions:
        body["instructions"] = instructions
    messages = from_responses_request(body)[0]["messages"] if items else []
    return {
        "meta": {
            "agent": f"Codex CLI {version}" if isinstance(version, str) else "Codex CLI",
            "notes": _notes(left_out, compactions),
        },
        "messages": messages,
        "assistant_times": _times(messages, times),
    }


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


def _answer_pending(items: list[dict[str, Any]], pending: dict[str, str]) -> None:
    """Close the open calls: a call whose output was never recorded gets the placeholder."""
    items += [
        {"type": kind, "call_id": call, "output": NO_RESULT} for call, kind in pending.items()
    ]
    pending.clear()


def _times(messages: list[dict[str, Any]], times: list[Any]) -> dict[str, Any]:
    """{index of each assistant message: its time}, when the answers line up one for one."""
    answers = [t for t, message in enumerate(messages) if message["role"] == "assistant"]
    if len(answers) != len(times):
        return {}
    return {str(t): at for t, at in zip(answers, times) if isinstance(at, str)}


def _notes(left_out: int, compactions: int) -> list[str]:
    notes = []
    if left_out:
        notes.append(f"{left_out} item(s) a chat model is not sent left out")
    if compactions:
        notes.append(
            f"{compactions} compaction(s) not followed: the later requests keep the whole history"
        )
    return notes
