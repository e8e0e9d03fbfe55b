"""How pinch measures a message: its text, and a cheap token estimate of that text.

Every request passes through here once per message, so both functions are
built to be cheap and to accept anything a client might send. A request body
is parsed JSON from a stranger: content may be a string, a list of parts, None,
or something no API defines. Counting must never be the thing that fails a
request, so odd shapes count as empty text rather than raising.

The estimate is deliberately crude (three characters a token, no tokenizer):
it only has to rank "over budget" against "under budget" and to size savings
consistently with the router's own measured-context estimate, which uses the
same ratio.
"""

from __future__ import annotations

from typing import Any

# Three characters a token: close enough for English prose and code under the
# common BPE vocabularies, and shared with the routing estimate so the two agree.
CHARS_PER_TOKEN = 3

# Tool results may nest parts inside parts; real clients go one level deep.
# The cap keeps a self-referencing or absurdly nested body from recursing
# until RecursionError.
_MAX_PART_DEPTH = 8


def estimate_tokens(text: str | None) -> int:
    """Return the estimated token count of ``text`` (0 for empty or None)."""
    if not text:
        return 0
    return len(text) // CHARS_PER_TOKEN


def message_tokens(message: Any) -> int:
    """Every part of ``message`` a model is sent, at three characters a token.

    Its text (``extract_text``), and what that leaves out but the upstream is
    sent all the same: tool calls' names and arguments, image data URLs,
    thinking, any other part's strings. The router's measure of a prompt (its
    context window, cost estimate and rate limits: routing.selection): 300 KB in
    a tool call's arguments is as much prompt as 300 KB of text. Pinch's own
    budget still reads the text alone (``extract_text``): counting the calls
    there too made the payback steps cost more than no pinch on 2 corpus sessions.
    """
    if not isinstance(message, dict):
        return 0
    return estimate_tokens(extract_text(message)) + _unread_chars(message) // CHARS_PER_TOKEN


def value_tokens(value: Any) -> int:
    """The strings of a JSON value (a block the chat form leaves out), three characters a token."""
    return _string_chars(value) // CHARS_PER_TOKEN


# Message keys that name or link rather than say something (role, tool name, call id).
_LABELS = frozenset({"role", "name", "tool_call_id", "content"})


def _unread_chars(message: dict) -> int:
    """Characters of ``message`` that ``extract_text`` does not read."""
    total = 0
    for key, value in message.items():
        if key not in _LABELS:
            total += len(value) if isinstance(value, str) else _string_chars(value)
    content = message.get("content")
    if not isinstance(content, list):
        return total
    stack = [content]
    while stack:
        parts = stack.pop()
        if not isinstance(parts, list):
            continue
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text":
                continue
            if kind == "tool_result":
                stack.append(part.get("content"))
                continue
            total += _string_chars(part)
    return total


def _string_chars(value: Any) -> int:
    """The characters of every string in a JSON value (not keys, not ``type`` tags)."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(v for k, v in item.items() if k != "type")
        elif isinstance(item, list):
            stack.extend(item)
    return total


def extract_text(message: Any) -> str:
    """Return the text a model would read in ``message``'s content.

    A string content is returned as is. List-of-parts content yields the text
    of its ``text`` parts and the content of its ``tool_result`` parts (a
    string, or parts again), non-empty pieces joined by newlines. Anything
    else is ``""``.
    """
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return _parts_text(content, 0)
    return ""


def _parts_text(parts: list, depth: int) -> str:
    if depth >= _MAX_PART_DEPTH:
        return ""
    pieces: list[str] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            text = part.get("text")
            if isinstance(text, str) and text:
                pieces.append(text)
        elif kind == "tool_result":
            inner = part.get("content")
            if isinstance(inner, list):
                inner = _parts_text(inner, depth + 1)
            if isinstance(inner, str) and inner:
                pieces.append(inner)
    return "\n".join(pieces)


def last_user_text(messages) -> str:
    """The text of the last user message: what the agent was asked to do now."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return extract_text(message)
    return ""
