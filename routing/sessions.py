"""Which agent session a request belongs to, and which of its conversations.

An agent session is dozens or hundreds of requests, and its cost and savings
belong to the session: agents name theirs, and each decision carries the name.

* Claude Code: the ``X-Claude-Code-Session-Id`` header (2.1.197 sends it on
  every request), else the ``session_id`` in ``metadata.user_id`` (a JSON
  string since 2.x; ``..._session_<id>`` before).
* opencode: its ``x-session-id`` header.
* Codex: its ``prompt_cache_key`` (its session id), else its ``session_id``
  header.
* Any other client: the router's own conversation key (routing.prefix_probe),
  so a session is at least one conversation.

A name the agent gives is scoped to the router key that sent it
(``<name>@<key id>``): another key sending the same session id (a copied
config, a guess) is another session, never merged into the first key's line.
The conversation key holds the router key already.

Inside a session, Claude Code runs a subagent (its ``Agent`` tool, ``Task``
before 2.x) as a conversation of its own under the same session id, and small
background requests (a title, a summary) with no tools. So: a request
offering the ``Agent``/``Task`` tool is the main conversation, one with tools
but without it a subagent's, one without tools background. Other agents have
no subagents here: every request with tools is their main conversation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from routing.prefix_probe import conversation_key

# The session ids agents send, longest kept: they are UUIDs or opencode's ses_... ids.
MAX_SESSION_CHARS = 200
# The tools Claude Code's main agent spawns subagents with (2.x, then 1.x).
SUBAGENT_TOOLS = frozenset({"Agent", "Task"})
# User-Agent prefix -> the agent's name.
AGENTS = (("claude-cli/", "claude-code"), ("codex", "codex"), ("opencode/", "opencode"))
_LEGACY_USER_ID = re.compile(r"_session_([0-9a-fA-F-]{8,})$")


@dataclass(frozen=True)
class SessionTag:
    session: str
    agent: str
    role: str  # "main", "subagent" or "background"
    user_turn: bool

    def fields(self) -> dict:
        """The decision row's fields."""
        return {
            "session": self.session,
            "agent": self.agent,
            "session_role": self.role,
            "user_turn": self.user_turn,
        }


def agent_of(meta: dict) -> str:
    agent = meta.get("HTTP_USER_AGENT", "")
    return next((name for prefix, name in AGENTS if agent.startswith(prefix)), "")


def _claude_code_session(meta: dict, body: dict) -> str:
    named = meta.get("HTTP_X_CLAUDE_CODE_SESSION_ID", "")
    if named:
        return named
    user_id = (body.get("metadata") or {}).get("user_id") if isinstance(body, dict) else None
    if not isinstance(user_id, str):
        return ""
    try:
        parsed = json.loads(user_id)
    except ValueError:
        match = _LEGACY_USER_ID.search(user_id)
        return match.group(1) if match else ""
    found = parsed.get("session_id") if isinstance(parsed, dict) else None
    return found if isinstance(found, str) else ""


def named_session(meta: dict, body: dict) -> str:
    """The session the client named, or ""."""
    named = _claude_code_session(meta, body) or meta.get("HTTP_X_SESSION_ID", "")
    if not named and isinstance(body, dict) and isinstance(body.get("prompt_cache_key"), str):
        named = body["prompt_cache_key"]
    return (named or meta.get("HTTP_SESSION_ID", ""))[:MAX_SESSION_CHARS]


def _tool_names(tools) -> set:
    names = set()
    for tool in tools or ():
        if isinstance(tool, dict):
            function = tool.get("function")
            names.add(function.get("name") if isinstance(function, dict) else tool.get("name"))
    return names


def _user_spoke(messages) -> bool:
    """The last message (system ones aside) is the user's, after an answer rather than a tool."""
    turns = [m.get("role") for m in messages if m.get("role") not in ("system", "developer")]
    if not turns or turns[-1] != "user":
        return False
    before = next((role for role in reversed(turns) if role != "user"), None)
    return before != "tool"


def session_tag(meta: dict, request, api_key_id, conversation: str | None) -> SessionTag:
    """The session of ``request`` (a ChatRequest), from the client's names or the conversation."""
    source = getattr(request.source, "body", None)
    body = source if isinstance(source, dict) else request.body
    agent = agent_of(meta)
    named = named_session(meta, body)
    session = f"{named}@{api_key_id}" if named else ""
    if not session:
        session = conversation or conversation_key(
            api_key_id, request.model, request.messages, request.conversation
        )
    names = _tool_names(request.tools)
    if not names:
        role = "background"
    elif agent == "claude-code" and not names & SUBAGENT_TOOLS:
        role = "subagent"
    else:
        role = "main"
    return SessionTag(session, agent, role, _user_spoke(request.messages))
