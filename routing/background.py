"""Work that is not the agent's main loop: recognised, so it goes to the cheapest tier.

Agents send requests besides the turns of their task: Claude Code calls its
small, fast model (``claude-haiku-*`` unless ANTHROPIC_SMALL_FAST_MODEL says
otherwise) and asks for a session title ("Generate a concise, sentence-case
title ... of this coding session"); Claude Code's /compact and Codex's
auto-compaction ask for a summary of the whole conversation ("create a
detailed summary of the conversation so far", "CONTEXT CHECKPOINT
COMPACTION"); scripts send short questions without tools. None of them needs
the model the task runs on, and none of them is a new task of the
conversation: they never move its model (routing.session_routing).

The patterns are the prompts the real clients send (Claude Code 2.1.197,
Codex 0.171), matched in the system prompt and in the last user message.
Pure: no Django, no I/O.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from itertools import compress, count

from pinch import extract_text
from routing.config import RouterConfig
from routing.task_text import last_index, may_hold, roles_of, typed_text

SMALL_MODEL = "small_model"
TITLE = "title"
SUMMARY = "summary"
COMPACTION = "compaction"
SHORT = "short"

# Checked in this order: a compaction prompt also asks for a summary.
_PROMPTS = (
    (
        COMPACTION,
        re.compile(
            r"CONTEXT CHECKPOINT COMPACTION|create a detailed summary of the conversation so far|"
            r"write a short memento message for the next agent",
            re.IGNORECASE,
        ),
    ),
    (
        TITLE,
        re.compile(
            r"\bgenerate an? (?:concise|short)\b[^.\n]{0,60}\btitle\b|"
            r"\b\d+-\d+ words? title\b|\bextract a \d+-\d+ word title\b",
            re.IGNORECASE,
        ),
    ),
    (
        SUMMARY,
        re.compile(
            r"\bsummari[sz]e (?:this|the) (?:coding )?conversation\b|"
            r"\bsummary of (?:this|the) conversation in\b",
            re.IGNORECASE,
        ),
    ),
)
# Nearly every request is none of them: one search for any of the prompts
# first, which the lookahead makes cheap (each prompt starts with one of these
# characters; measured on a 2 KB task, 94 us against 251 us for the three
# searches that then tell them apart).
_ANY_PROMPT = re.compile(
    r"(?=[cwges\d])(?:" + "|".join(pattern.pattern for _, pattern in _PROMPTS) + ")",
    re.IGNORECASE,
)
# Every prompt holds one of these words: a head with none of them (nearly every one) is
# not searched at all (routing.task_text.may_hold).
_CUES = ("compaction", "summary of", "summarise", "summarize", "memento", "title")
_SYSTEM_ROLES = ("system", "developer")
# Only the head of a message is read: the prompts state their job first, and
# a compaction request's conversation can be megabytes long.
_HEAD_CHARS = 2000


def background_kind(
    client_model: str, messages, tools, measured_tokens: int, config: RouterConfig, facts=None
) -> str:
    """The kind of background work this request is ("" for the agent's main loop).

    ``facts``: what is read of each message (pinch.carry.MessageFacts), when the
    caller has them: each message's role, and the prompt its head holds, are
    then carried through the conversation, and no message is read again.
    """
    rules = config.routing.background
    if not rules.enabled:
        return ""
    if any(fnmatchcase(client_model, pattern) for pattern in rules.model_names):
        return SMALL_MODEL
    roles = facts.roles if facts is not None else roles_of(messages)
    # The system prompts found in C: a loop over every message's role took 6 us in 200.
    read = list(compress(count(), map(_SYSTEM_ROLES.__contains__, roles)))
    last_user = last_index(roles, "user")
    if last_user is not None:
        read.append(last_user)
    if facts is not None:
        kinds = facts.figure("background_prompt", _prompt_in)
        found = {kinds[i] for i in read}
    else:
        found = {_prompt_in(i, messages[i]) for i in read}
    for kind, _ in _PROMPTS:
        if kind in found:
            return kind
    short = not tools and measured_tokens <= rules.short_tokens
    if short and "tool" not in roles:
        return SHORT
    return ""


def _prompt_in(i: int, message) -> str:
    """The kind of background prompt a message's head holds (its first in ``_PROMPTS``' order,
    "" for none): a system prompt's text, a user message's typed text; any other's none."""
    role = message.get("role") if isinstance(message, dict) else None
    if role in _SYSTEM_ROLES:
        head = extract_text(message)[:_HEAD_CHARS]
    elif role == "user":
        head = typed_text(message)[:_HEAD_CHARS]
    else:
        return ""
    if not (may_hold(head, _CUES) and _ANY_PROMPT.search(head)):
        return ""
    return next((kind for kind, pattern in _PROMPTS if pattern.search(head)), "")
