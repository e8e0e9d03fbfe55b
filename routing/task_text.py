"""What the user typed: the text a routing tier is chosen from, with the agent's harness taken out.

Agents wrap the user's words in their own text. Claude Code's first user
message carries several KB of ``<system-reminder>`` blocks (agent types,
skills, CLAUDE.md, the date) before the user's "say hi", and attaches more to
tool results; Codex sends ``<environment_context>`` and AGENTS.md
instructions as user messages of their own. That text is the same whether
the task is trivial or hard, and it is full of words like "architecture",
"security" and "debug": read as the user's, it sends every agent request to
the hard tier (measured through ``claude-*: auto``: ``claude -p "say hi"``
went to the dearest model). So the tier reads only what is left of user
messages once those blocks are removed; system prompts, tool definitions and
tool output are never user messages in the chat form the pipeline plans on.

A user message with nothing left (only harness blocks) is not a turn of the
user: the task is still the one the last typed message began. Pure: no
Django, no I/O.
"""

from __future__ import annotations

import re
from typing import Any

from pinch import extract_text

# Blocks an agent writes into user messages on the user's behalf (Claude Code,
# Codex, opencode): removed whole, tags included.
_HARNESS_BLOCK = re.compile(
    r"<(system-reminder|environment_context|user_instructions|INSTRUCTIONS|"
    r"local-command-caveat|local-command-stdout|local-command-stderr|turn_aborted)>"
    r".*?</\1>",
    re.DOTALL,
)
# Codex's heading above the AGENTS.md block (the block itself is INSTRUCTIONS). Its ``^``
# under re.MULTILINE is tried at every position: a text without the heading's words is not
# searched (9 us on a 2 KB message, the substring test 0.4).
_HARNESS_HEADING = "# AGENTS.md instructions for "
_HARNESS_LINE = re.compile(r"^# AGENTS\.md instructions for .*$", re.MULTILINE)
_IMAGE_PARTS = ("image_url", "input_image", "image")


def typed_text(message: Any) -> str:
    """The text of a user message without the harness blocks ("" for any other message)."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return ""
    text = _HARNESS_BLOCK.sub("", extract_text(message))
    if _HARNESS_HEADING in text:
        text = _HARNESS_LINE.sub("", text)
    return text.strip()


def _has_image(message: dict) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") in _IMAGE_PARTS for part in content
    )


def is_user_turn(message: Any) -> bool:
    """Whether the user spoke in this message: typed text, or an image of their own."""
    if typed_text(message):
        return True
    return isinstance(message, dict) and message.get("role") == "user" and _has_image(message)


# The loops below ask a message its role before anything else: in an agent's loop most
# messages are the model's and tool results, and a call per message to find that out took
# as long as the rest (a 200-message loop: ~50 us a pass, ~15 without).


def task_start(messages, facts=None) -> int | None:
    """Index of the message that began the current task (the last user turn), or None.

    ``facts`` (pinch.carry.MessageFacts of ``messages``): whether each message is a
    user turn is carried from the conversation's previous request, so only the
    messages it did not send are read (the search back from the end otherwise reads
    every tool result and agent message since the user last spoke).
    """
    if facts is not None:
        turns = facts.figure("user_turn", lambda i, message: is_user_turn(message))
        return last_index(turns, True)
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, dict) and message.get("role") == "user" and is_user_turn(message):
            return index
    return None


def roles_of(messages) -> list:
    """Each message's role, None for one that is no object (``MessageFacts.roles``' reading)."""
    return [m.get("role") if isinstance(m, dict) else None for m in messages]


def last_index(values: list, wanted) -> int | None:
    """The index of the last item of ``values`` equal to ``wanted``, or None."""
    # Searched in C on a reversed copy: an agent's last user turn is often its first
    # message, and a loop back to it in Python took 8 us over 200 messages.
    try:
        return len(values) - 1 - values[::-1].index(wanted)
    except ValueError:
        return None


def typed_texts(facts) -> list[str]:
    """``typed_text`` of each message of ``facts`` (pinch.carry.MessageFacts), carried through
    the conversation."""
    return facts.figure("typed", lambda i, message: typed_text(message))


def task_text(messages, facts=None) -> str:
    """What the user typed for the current task; "" when no message of the user's is found.

    ``facts``: the MessageFacts of ``messages``, whose typed texts are carried (``typed_texts``).
    """
    if facts is not None:
        typed, roles = typed_texts(facts), facts.roles
        for index in range(len(typed) - 1, -1, -1):
            if typed[index]:
                return typed[index]
            if roles[index] == "user" and _has_image(messages[index]):
                return ""
        return ""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        text = typed_text(message)
        if text:
            return text
        if _has_image(message):
            return ""  # an image of the user's own: a turn, with no text
    return ""


def may_hold(text: str, words: tuple[str, ...]) -> bool:
    """False only when no pattern under ``re.IGNORECASE`` can find any of ``words``
    (lowercase ASCII) in ``text``: the cheap first pass before such a search.

    A substring test of the case-folded text (3 us on a 2 KB turn) where the search tries
    its pattern at every position (40-50 us). ``re.IGNORECASE`` also takes the Turkish
    dotted and dotless I for ``i``, which case folding keeps apart: a text holding either
    may hold anything.
    """
    folded = text.casefold()
    return any(word in folded for word in words) or "\u0130" in text or "\u0131" in text


def typed_chars(messages, facts=None) -> int:
    """Characters the user typed over the whole conversation (every turn, harness left out).

    ``facts``: as ``task_text``'s.
    """
    if facts is not None:
        return sum(map(len, typed_texts(facts)))
    return sum(
        len(typed_text(message))
        for message in messages
        if isinstance(message, dict) and message.get("role") == "user"
    )


def user_turns(messages) -> int:
    """How many times the user spoke in the conversation."""
    return sum(1 for message in messages if is_user_turn(message))
