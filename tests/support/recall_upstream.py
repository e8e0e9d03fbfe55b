"""How the test upstreams play a model that recalls what pinch trimmed (``recall-*`` models).

A model that reads its conversation as a real one would: it sees a tool
result pinch shortened (the ``[recall r...]`` note), calls the router's
``router_recall`` tool for the lines it is after (those naming ``VAULT``),
and once the recalled text is in its conversation answers with the line
only the original held. ``recallmixed`` models call an agent tool in the
same answer as the recall (the router must answer the recall first).

Each upstream (chat completions, Messages, Responses) reads its own body
into ``Seen`` and turns the ``step`` into its own answer shape.
"""

import re
from dataclasses import dataclass, field

RECALL_TOOL = "router_recall"
# The line a test puts in the middle of a long tool result; pinch's head and tail elision drops it.
VAULT_LINE = "VAULT code of the day: 7319-ALPHA-2264"
PATTERN = "VAULT"
NOTE = re.compile(r"\[recall (r\d+)\]")


def long_result(lines: int = 1200) -> str:
    """A tool result long enough for pinch to trim, the vault line in its middle."""
    rows = [f"log line {n}: worker ok, nothing to see" for n in range(lines)]
    rows[lines // 2] = VAULT_LINE
    return "\n".join(rows)


@dataclass
class Seen:
    """What the upstream reads in a request: its tool results, the recalled texts, its tools."""

    results: list = field(default_factory=list)  # every tool result's text, in order
    recalled: list = field(default_factory=list)  # the results of router_recall calls
    tools: list = field(default_factory=list)  # the names of the tools offered
    last_is_result: bool = False


def step(seen: Seen, model: str) -> dict | None:
    """``{"recall": handle, "also": tool-or-None}``, ``{"text": ...}``, or None (answer as echo)."""
    if seen.recalled:
        found = [
            line for text in seen.recalled for line in text.split("\n") if "VAULT code" in line
        ]
        return {
            "text": f"From the full result: {found[0]}" if found else "The recall gave nothing."
        }
    handles = [m.group(1) for text in seen.results for m in NOTE.finditer(text)]
    if handles and seen.last_is_result and RECALL_TOOL in seen.tools:
        others = [name for name in seen.tools if name != RECALL_TOOL]
        also = others[0] if model.startswith("recallmixed") and others else None
        return {"recall": handles[0], "also": also}
    return None


def recall_arguments(handle: str) -> dict:
    return {"id": handle, "pattern": PATTERN}


def chat_seen(body: dict) -> Seen:
    messages = body.get("messages") or []
    ours = {
        call.get("id")
        for m in messages
        for call in m.get("tool_calls") or ()
        if (call.get("function") or {}).get("name") == RECALL_TOOL
    }
    seen = Seen(tools=[(t.get("function") or {}).get("name") for t in body.get("tools") or ()])
    for message in messages:
        if message.get("role") == "tool":
            text = _text(message.get("content"))
            (seen.recalled if message.get("tool_call_id") in ours else seen.results).append(text)
    seen.last_is_result = bool(messages) and messages[-1].get("role") == "tool"
    return seen


def messages_seen(body: dict) -> Seen:
    messages = body.get("messages") or []
    ours = {
        block.get("id")
        for m in messages
        for block in _blocks(m)
        if block.get("type") == "tool_use" and block.get("name") == RECALL_TOOL
    }
    seen = Seen(tools=[t.get("name") for t in body.get("tools") or ()])
    for message in messages:
        for block in _blocks(message):
            if block.get("type") == "tool_result":
                text = _text(block.get("content"))
                (seen.recalled if block.get("tool_use_id") in ours else seen.results).append(text)
    last = messages[-1] if messages else {}
    seen.last_is_result = any(b.get("type") == "tool_result" for b in _blocks(last))
    return seen


def responses_seen(body: dict) -> Seen:
    items = body.get("input") if isinstance(body.get("input"), list) else []
    ours = {
        item.get("call_id")
        for item in items
        if item.get("type") == "function_call" and item.get("name") == RECALL_TOOL
    }
    seen = Seen(tools=[t.get("name") for t in body.get("tools") or ()])
    for item in items:
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            text = _text(item.get("output"))
            (seen.recalled if item.get("call_id") in ours else seen.results).append(text)
    seen.last_is_result = bool(items) and items[-1].get("type") in (
        "function_call_output",
        "custom_tool_call_output",
    )
    return seen


def _blocks(message) -> list:
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def log_file(lines: int = 150) -> str:
    """A log an agent reads with a shell command: over pinch's 3,000 characters, under the
    agents' own output limits, the vault line in its middle."""
    return long_result(lines) + "\n"
