"""Reading a chat completion and its chunks as they go back to the client: size, end, usage.

The answer is relayed as the upstream sent it; what the router needs of it
is how long it was (for an estimate when no usage came), whether a chunk
finished the answer, and the usage chunk it asked for on the caller's behalf.
"""

from routing import jsonio
from routing.protocols.base import Answer


def finished(choices) -> bool:
    return any(isinstance(c, dict) and c.get("finish_reason") for c in choices or ())


def asks_tools(choices, part: str) -> bool:
    """Whether an answer (``part`` "message") or a chunk ("delta") asks for tool calls."""
    return any(
        isinstance(c, dict)
        and (c.get("finish_reason") == "tool_calls" or bool((c.get(part) or {}).get("tool_calls")))
        for c in choices or ()
    )


def answer_chars(choices) -> int:
    total = 0
    for choice in choices or ():
        if not isinstance(choice, dict):
            continue
        part = choice.get("delta") or choice.get("message") or {}
        if isinstance(part, dict):
            content = part.get("content")
            if isinstance(content, str):
                total += len(content)
            for call in part.get("tool_calls") or ():
                if isinstance(call, dict):
                    total += len(str((call.get("function") or {}).get("arguments") or ""))
    return total


def read_answer(data: dict) -> Answer:
    """A completion as the client gets it, read once: its bytes, usage, size, tool calls."""
    choices = data.get("choices")
    return Answer(
        jsonio.dumps(data),
        data.get("usage"),
        answer_chars(choices),
        asks_tools(choices, "message"),
    )
