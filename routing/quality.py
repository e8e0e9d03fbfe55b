"""What the agent did next, read from its own messages: the quality signals, without a model.

Pinch decides what the agent no longer sees; whether that costs the agent
anything shows in what it sends next. This module reads one request (the
messages an agent sent) and says, for the agent's newest message (its last
assistant message: the one it wrote after its previous request):

* re-fetches: tool calls that repeat an earlier call (the same tool and
  arguments, or a read of the same path) whose result the agent saw
  compressed; beside them the same repeats of results it saw whole, the
  baseline, since agents re-read files on their own. The exposure (results
  it saw compressed, or whole) comes with them, so each is a rate per
  result and turn, and the two rates compare like with like;
* the tool results answering that message, and those that report an error
  (a tool error after a prune is a sign the agent acted on what it could
  not see);
* which user task the request serves (the count of user messages), so
  turns and prompt tokens per task can be added up from the decisions.

Pure: no Django, no I/O. The live path (routing/pipeline.py) and the replay
(routing/replay/quality.py) call the same function; ``compressed`` is the
set of message indexes the agent saw compressed when it wrote its newest
message. The replay knows it exactly (its previous turn's payload); live,
the router passes the results compressed in the payload it is about to send
that are older than the newest message. Pinch decides a result's fate once
and never revisits it, so those were compressed in the previous payload
too, except on the turn a prune step compresses them (docs/quality.md).

The error test reads the head of a result only (``ERROR_HEAD_CHARS``): a
file that mentions "error" deep inside is not a failed call.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pinch import extract_text
from routing.task_text import last_index, roles_of

# How far into a tool result an error reads: the status lines agents put first.
ERROR_HEAD_CHARS = 300
_ERROR_PATTERNS = re.compile(
    r"<returncode>\s*[1-9]\d*\s*</returncode>"  # mini-swe-agent
    r"|^Exit code [1-9]"  # Claude Code's Bash
    r"|<tool_use_error>"  # Claude Code's refused calls
    r"|Traceback \(most recent call last\)"
    r"|^(?:Error|ERROR|error)\b"
    r"|No such file or directory|command not found",
    re.MULTILINE,
)
# Signatures remembered per process: a long session has a few hundred calls.
SIGNATURES_CACHED = 20_000
# Arguments that describe a call without changing what it fetches (Claude Code's Bash).
_NOISE_ARGUMENTS = {"description"}
_PATH_ARGUMENTS = ("file_path", "path", "filename", "file")
# Tools that fetch a file by a path argument; anything named like these reads.
_READ_TOOL = re.compile(r"read|view|open|cat|get_file|show", re.IGNORECASE)
# Shell commands that print a file: the path is their last argument.
_SHELL_READERS = {"cat", "head", "tail", "less", "more", "nl", "bat", "sed", "open"}
_SHELL_SPLIT = re.compile(r"&&|\|\||;|\||\n")


@dataclass(frozen=True)
class RequestSignals:
    """What one request says about the agent's newest message (RouteDecision's quality_*)."""

    calls: int = 0
    repeats_compressed: int = 0
    repeats_whole: int = 0
    seen_compressed: int = 0
    seen_whole: int = 0
    results: int = 0
    errors: int = 0
    task: int = 0

    def as_fields(self) -> dict[str, int]:
        """The decision row's columns."""
        # Not dataclasses.asdict, which deep-copies each value (10 us against 1.3 us).
        return {f"quality_{name}": value for name, value in vars(self).items()}


def _role(message: Any) -> str | None:
    return message.get("role") if isinstance(message, dict) else None


def _calls(message: Any) -> list[tuple[str, str, Any]]:
    """(call id, tool name, raw arguments) of an assistant message's tool calls."""
    found = []
    for call in message.get("tool_calls") or () if isinstance(message, dict) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            found.append((call.get("id"), function["name"], function.get("arguments")))
    return found


def _shell_read(command: str) -> str | None:
    """The path a shell command prints (``cat a.py``, ``sed -n 1,40p a.py | head``), or None."""
    for segment in _SHELL_SPLIT.split(command):
        first = segment.split(None, 1)
        if not first or first[0] not in _SHELL_READERS:
            continue  # shlex is slow: only a reader's segment is worth splitting properly
        try:
            words = shlex.split(segment)
        except ValueError:
            words = segment.split()
        if words and words[0] in _SHELL_READERS:
            # Options and line counts or ranges (head -n 50, sed -n 1,40p) are not paths;
            # the file comes last (after sed's script).
            paths = [w for w in words[1:] if not w.startswith("-") and not w[:1].isdigit()]
            if paths:
                return paths[-1]
    return None


def call_signature(name: str, arguments: Any) -> tuple[str, str]:
    """What a call fetches: ("read", path) for a file read, else (tool, canonical arguments)."""
    if isinstance(arguments, str):
        return _signature_of_text(name, arguments)
    return _signature(name, arguments)


# The same calls come back on every turn of a conversation: each is read once per process.
@lru_cache(maxsize=SIGNATURES_CACHED)
def _signature_of_text(name: str, arguments: str) -> tuple[str, str]:
    return _signature(name, arguments)


def _signature(name: str, arguments: Any) -> tuple[str, str]:
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        parsed = arguments
    if isinstance(parsed, dict):
        for key in _PATH_ARGUMENTS:
            path = parsed.get(key)
            if (
                isinstance(path, str)
                and path
                and _READ_TOOL.search(name + str(parsed.get("command")))
            ):
                return "read", path.strip()
        command = parsed.get("command")
        if isinstance(command, str):
            path = _shell_read(command)
            if path is not None:
                return "read", path
        canonical = {k: v for k, v in parsed.items() if k not in _NOISE_ARGUMENTS}
        return name, json.dumps(canonical, sort_keys=True, default=str)
    return name, json.dumps(parsed, default=str)


def is_error_result(message: Any) -> bool:
    """Whether a tool result reports a failed call (by its head; see ERROR_HEAD_CHARS)."""
    if isinstance(message, dict) and message.get("is_error") is True:
        return True
    return bool(_ERROR_PATTERNS.search(extract_text(message)[:ERROR_HEAD_CHARS].lstrip()))


def newest_agent_message(messages: Sequence[Any]) -> int | None:
    return next(
        (t for t in range(len(messages) - 1, -1, -1) if _role(messages[t]) == "assistant"), None
    )


def request_signals(
    messages: Sequence[Any], compressed: Iterable[int] = (), roles: list | None = None, facts=None
) -> RequestSignals:
    """The signals of one request; ``compressed``: indexes the agent saw compressed.

    ``roles``: each message's role (None for no object), when the caller has them
    (pinch.carry.MessageFacts.roles, carried through the conversation): only the
    agent's messages and the tool results are then read. ``facts``: the
    MessageFacts of ``messages``, when the caller has them: the calls and results
    before the newest message are then read on from where the conversation's
    previous request left them (``_answered``), not from the start.
    """
    if facts is not None:
        roles = facts.roles
    elif roles is None:
        roles = roles_of(messages)
    task = roles.count("user")
    newest = last_index(roles, "assistant")
    if newest is None:
        return RequestSignals(task=task)
    compressed = set(compressed)
    answered = _answered(messages, roles, newest, facts)
    # The results before the newest message, and of them those the agent saw compressed.
    seen = roles[:newest].count("tool")
    seen_compressed = sum(1 for i in compressed if 0 <= i < newest and roles[i] == "tool")
    calls = _calls(messages[newest])
    repeats_compressed = repeats_whole = 0
    for _, name, arguments in calls:
        earlier = answered.get(call_signature(name, arguments))
        if earlier is None:
            continue
        if earlier in compressed:
            repeats_compressed += 1
        else:
            repeats_whole += 1
    answers = [messages[i] for i in range(newest + 1, len(roles)) if roles[i] == "tool"]
    return RequestSignals(
        calls=len(calls),
        repeats_compressed=repeats_compressed,
        repeats_whole=repeats_whole,
        seen_compressed=seen_compressed,
        seen_whole=seen - seen_compressed,
        results=len(answers),
        errors=sum(1 for m in answers if is_error_result(m)),
        task=task,
    )


# The name routing.quality's walk keeps its state under (pinch.carry.MessageFacts.walked).
_WALK = "quality_signals"


def _answered(messages, roles: list, stop: int, facts) -> dict[tuple[str, str], int]:
    """Each call's signature -> the index of its latest result, over the messages before
    ``stop``: read on from where the conversation's previous request left it (``facts``)
    when the request repeats the messages it read."""
    carried = facts.walked(_WALK) if facts is not None else None
    if carried is not None and carried[0] <= stop:
        start, pending, answered = carried[0], dict(carried[1][0]), dict(carried[1][1])
    else:
        start, pending, answered = 0, {}, {}
    for i in range(start, stop):
        role = roles[i]
        if role == "assistant":
            for call_id, name, arguments in _calls(messages[i]):
                pending[call_id] = call_signature(name, arguments)
        elif role == "tool":
            signature = pending.get(messages[i].get("tool_call_id"))
            if signature is not None:
                answered[signature] = i
    if facts is not None:
        facts.keep_walk(_WALK, stop, (pending, answered))
    return answered


def stopped_mid_loop(messages: Sequence[Any]) -> bool:
    """Whether a recorded session ends inside a tool loop: its last call unanswered by the model.

    It ends on a tool result the model never answered, or on an assistant
    message that asked for tools (a session that finished ends on the
    model's own words).
    """
    for message in reversed(messages):
        role = _role(message)
        if role == "tool":
            return True
        if role == "assistant":
            return bool(_calls(message))
        if role == "user":
            return False
    return False
