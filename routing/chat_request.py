"""The one schema a chat-completions body is checked against.

Only what the router relies on is checked (model, messages and their roles,
stream flags, max tokens); every other field is kept as sent and passed
through untouched, so new provider parameters work without a router release.
"""

from dataclasses import dataclass

from routing.errors import RouterError

ROLES = {"system", "developer", "user", "assistant", "tool", "function"}


@dataclass(frozen=True)
class ChatRequest:
    body: dict
    model: str
    messages: list
    stream: bool
    include_usage: bool
    max_tokens: int
    tools: list | None

    @property
    def has_images(self) -> bool:
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, list):
                for part in content:
                    if isinstance(part, dict) and part.get("type") in ("image_url", "input_image"):
                        return True
        return False

    @property
    def wants_json(self) -> bool:
        response_format = self.body.get("response_format")
        return isinstance(response_format, dict) and response_format.get("type") in (
            "json_object",
            "json_schema",
        )

    @property
    def needed_capabilities(self) -> set[str]:
        needed = set()
        if self.has_images:
            needed.add("vision")
        if self.wants_json:
            needed.add("json_mode")
        if self.tools:
            needed.add("tools")
        return needed


def _bad(message, param=None, code="invalid_request"):
    return RouterError(400, message, code, param)


def _check_message(index, message):
    where = f"messages[{index}]"
    if not isinstance(message, dict):
        raise _bad(f"{where} must be an object", where)
    role = message.get("role")
    if role not in ROLES:
        raise _bad(
            f"{where}.role must be one of {', '.join(sorted(ROLES))}; got {role!r}",
            f"{where}.role",
            "invalid_role",
        )
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        raise _bad(f"{where}.content must be a string, a list of parts or null", f"{where}.content")
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise _bad(f"{where} is a tool result without a tool_call_id", f"{where}.tool_call_id")


def _positive_int(body, name):
    value = body.get(name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _bad(f"{name} must be a positive integer", name)
    return value


def parse_chat_request(body) -> ChatRequest:
    """Check a parsed JSON body; raise RouterError(400) naming the first problem."""
    if not isinstance(body, dict):
        raise _bad("The body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("'model' is required and must be a string", "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("'messages' is required and must be a non-empty list", "messages")
    for index, message in enumerate(messages):
        _check_message(index, message)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _bad("'stream' must be true or false", "stream")
    stream_options = body.get("stream_options")
    if stream_options is not None and not isinstance(stream_options, dict):
        raise _bad("'stream_options' must be an object", "stream_options")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise _bad("'tools' must be a list", "tools")
    max_tokens = _positive_int(body, "max_completion_tokens") or _positive_int(body, "max_tokens")
    return ChatRequest(
        body=body,
        model=model,
        messages=messages,
        stream=stream,
        include_usage=bool((stream_options or {}).get("include_usage")),
        max_tokens=max_tokens,
        tools=tools or None,
    )
