"""A /v1/messages body: its check, and its parse into the request the pipeline plans on.

Only what the router or an upstream relies on is checked (model, max_tokens,
the turns and their blocks' types and the fields it reads, tools, the
generation settings' types); every other field passes as sent. A problem is
a 400 naming the field in the one path style (``messages[3].role``). The
body is then translated (routing.protocols.messages.inbound), and the
chat-completions body that comes out goes through the same schema as a
/v1/chat/completions body, the client's original riding along as the
request's ``source``.
"""

from dataclasses import replace

from routing.errors import RouterError
from routing.protocols.base import TranslationError, json_body
from routing.protocols.canonical import ChatRequest
from routing.protocols.chat.request import parse_chat_request
from routing.protocols.messages.inbound import from_messages_request

# "system" inside messages: Claude Code sends one (beta mid-conversation-system-2026-04-07)
# when its model name is not a Claude one; it is text only.
_ROLES = ("user", "assistant", "system")


def _bad(message: str, param: str | None = None) -> TranslationError:
    return TranslationError(message, param)


def check_messages_body(body, count_only: bool = False) -> None:
    """Raise TranslationError naming the first field the router cannot work with."""
    if not isinstance(body, dict):
        raise _bad("The body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("model: Field required (a string)", "model")
    max_tokens = body.get("max_tokens")
    if not count_only and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise _bad("max_tokens: Field required (a positive integer)", "max_tokens")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("messages: Field required (a non-empty list)", "messages")
    for i, turn in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(turn, dict):
            raise _bad(f"{where}: must be an object", where)
        if turn.get("role") not in _ROLES:
            raise _bad(f"{where}.role: must be 'user', 'assistant' or 'system'", f"{where}.role")
        _check_content(turn.get("content"), f"{where}.content")
        content = turn["content"]
        blocks = [] if isinstance(content, str) else content
        if turn["role"] == "system" and any(block.get("type") != "text" for block in blocks):
            raise _bad(f"{where}.content: a system message holds text blocks only", where)
    system = body.get("system")
    if system is not None and not isinstance(system, str):
        _check_content(system, "system")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise _bad("stream: must be true or false", "stream")
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise _bad("tools: must be a list", "tools")
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                raise _bad(f"tools[{i}]: a tool needs a name", f"tools[{i}]")
    for name, kind in (("tool_choice", dict), ("metadata", dict), ("stop_sequences", list)):
        if body.get(name) is not None and not isinstance(body[name], kind):
            raise _bad(f"{name}: must be {'an object' if kind is dict else 'a list'}", name)
    if not all(isinstance(s, str) for s in body.get("stop_sequences") or ()):
        raise _bad("stop_sequences: must be strings", "stop_sequences")
    for name in ("temperature", "top_p", "top_k"):
        value = body.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise _bad(f"{name}: must be a number", name)


# Block type -> (field, the type it must have) the router reads; the rest passes as sent.
_BLOCK_FIELDS = {
    "text": (("text", str),),
    "image": (("source", dict),),
    "tool_use": (("id", str), ("name", str), ("input", dict)),
    "tool_result": (("tool_use_id", str),),
}


def _check_content(content, where: str) -> None:
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise _bad(f"{where}: must be a string or a list of blocks", where)
    for j, block in enumerate(content):
        at = f"{where}[{j}]"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise _bad(f"{at}: a block must be an object with a type", at)
        for name, kind in _BLOCK_FIELDS.get(block["type"], ()):
            if not isinstance(block.get(name), kind):
                raise _bad(f"{at}.{name}: Field required ({kind.__name__})", f"{at}.{name}")
        if block["type"] == "tool_result":
            inner = block.get("content")
            if inner is not None and not isinstance(inner, str):
                _check_content(inner, f"{at}.content")


def messages_to_chat(body, count_only: bool = False):
    """(chat body, MessagesSource) for a checked body; TranslationError naming the first problem."""
    check_messages_body(body, count_only)
    return from_messages_request(body, count_only)


def parse_messages_request(body, count_only: bool = False) -> ChatRequest:
    """Raise RouterError(400) naming the first problem; ``count_only``: no max_tokens needed."""
    try:
        chat, source = messages_to_chat(body, count_only)
    except TranslationError as error:
        raise RouterError(400, error.message, "invalid_request", error.param) from None
    return replace(parse_chat_request(chat), source=source)


def parse_messages_body(raw: bytes, count_only: bool = False) -> ChatRequest:
    """Raw /v1/messages bytes -> ChatRequest, or RouterError(400)."""
    return parse_messages_request(json_body(raw), count_only)
