"""The router's own tool, as each upstream shape declares it, and how a call of it reads.

One definition, written out in the three shapes an upstream is sent
(chat-completions and Responses function tools, a Messages tool), always the
same bytes and always last in the tools block: the agent's own tools keep
their place, and the block (and the provider's cache behind it) stays the
same from a conversation's first request to its last.
"""

import json
from dataclasses import dataclass

from routing.recall import TOOL_NAME

DESCRIPTION = (
    "Get back a tool result the router shortened to save context. A shortened result "
    "ends with a line '[recall <id>]'; pass that id. Give "
    "from_line and to_line (1-based, inclusive) or a pattern (a regular expression; "
    "the lines it finds) to get only the part you need; neither: the whole result."
)

PARAMETERS = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "The recall id named in the shortened result."},
        "from_line": {"type": "integer", "description": "First line to return (1-based)."},
        "to_line": {"type": "integer", "description": "Last line to return (inclusive)."},
        "pattern": {"type": "string", "description": "Return only the lines this finds."},
    },
    "required": ["id"],
}

CHAT_TOOL = {
    "type": "function",
    "function": {"name": TOOL_NAME, "description": DESCRIPTION, "parameters": PARAMETERS},
}
MESSAGES_TOOL = {"name": TOOL_NAME, "description": DESCRIPTION, "input_schema": PARAMETERS}
RESPONSES_TOOL = {
    "type": "function",
    "name": TOOL_NAME,
    "description": DESCRIPTION,
    "parameters": PARAMETERS,
}


def with_tool(body: dict, tool: dict) -> dict:
    """``body`` (a new dict) with ``tool`` last in its tools; as it is when it declares none.

    A request without tools is no agent's tool loop: pinch has no tool result
    to trim there, and a tool it never asked for would change what the model does.
    """
    tools = body.get("tools")
    if not isinstance(tools, list) or not tools:
        return body
    # A copy each time: the Anthropic provider marks cache breakpoints on blocks in place,
    # the last tool among them. A shallow one: a breakpoint is a key of the block itself
    # (a deep copy of the schema was 11 us a request).
    return {**body, "tools": [*tools, {**tool}]}


def offers_tool(pinch_config) -> bool:
    """The router offers its tool on a conversation's requests: pinch is on for it (not the
    holdout, not ``pinch.enabled: false``) and ``pinch.recall.enabled``."""
    return pinch_config.enabled and pinch_config.recall.enabled


def tools_sent(tools, pinch_config):
    """The request's tools as an upstream gets them, in chat shape: with the router's last when
    it offers it and the request declares tools (``with_tool``'s rule). What the request's
    prompt is measured with (routing.pipeline): the tool is sent, so it is counted."""
    return [*tools, CHAT_TOOL] if _adds_tool(tools, pinch_config) else tools


# What the router's tool adds to a tools list written out as JSON (json.dumps's default
# separators): its own JSON and the ", " before it.
_ADDED_CHARS = len(", ") + len(json.dumps(CHAT_TOOL))


def tools_sent_chars(tools, pinch_config, declared_chars: int) -> int:
    """The characters of ``tools_sent(tools, pinch_config)`` as JSON, given ``declared_chars``,
    those of ``tools``: an agent's tool definitions (tens of KB) are not written out again."""
    return declared_chars + _ADDED_CHARS if _adds_tool(tools, pinch_config) else declared_chars


def _adds_tool(tools, pinch_config) -> bool:
    return offers_tool(pinch_config) and isinstance(tools, list) and bool(tools)


@dataclass(frozen=True)
class RecallArguments:
    handle: str
    from_line: int | None = None
    to_line: int | None = None
    pattern: str | None = None


def read_arguments(raw) -> RecallArguments | None:
    """A call's arguments (a JSON string, or already an object); None when they name no handle."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw or "{}")
        except ValueError:
            return None
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        return None

    def line(name):
        value = raw.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    pattern = raw.get("pattern")
    return RecallArguments(
        raw["id"].strip(),
        line("from_line"),
        line("to_line"),
        pattern if isinstance(pattern, str) and pattern else None,
    )
