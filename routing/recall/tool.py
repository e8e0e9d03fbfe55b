"""The router's own tool, as each upstream shape declares it, and how a call of it reads.

One definition, written out in the three shapes an upstream is sent
(chat-completions and Responses function tools, a Messages tool), always the
same bytes and always last in the tools block: the agent's own tools keep
their place, and the block (and the provider's cache behind it) stays the
same from a conversation's first request to its last.
"""

import copy
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
    # the last tool among them.
    return {**body, "tools": [*tools, copy.deepcopy(tool)]}


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
