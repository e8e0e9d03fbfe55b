"""A /v1/responses body: its check, and its parse into the request the pipeline plans on.

The body is checked once, here (only what the router or an upstream relies
on; the rest passes as sent), a problem being a 400 naming the field in the
one path style (``input[3].role``); then the stored conversation a
``previous_response_id`` names is read, and the body translated
(routing.protocols.responses.inbound). The chat-completions body that comes
out goes through the same schema as a /v1/chat/completions body, and the
client's items ride along as the request's ``source``. ``prompt_cache_key``,
when the client sends one, is the conversation's key for the prefix probe.
"""

from dataclasses import replace

from routing.errors import RouterError
from routing.protocols.base import TranslationError, json_body
from routing.protocols.canonical import ChatRequest
from routing.protocols.chat.request import parse_chat_request
from routing.protocols.responses.inbound import from_responses_request
from routing.protocols.responses.store import conversation_items


def _bad(message: str, param: str | None = None) -> TranslationError:
    return TranslationError(message, param)


def _invalid(error: TranslationError) -> RouterError:
    return RouterError(400, error.message, "invalid_request", error.param)


def check_responses_body(body) -> None:
    """Raise TranslationError naming the first field the router cannot work with."""
    if not isinstance(body, dict):
        raise _bad("The body must be a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise _bad("'model' is required and must be a string", "model")
    value = body.get("input")
    if not isinstance(value, str | list) or (not value and not body.get("previous_response_id")):
        raise _bad("'input' is required: a string or a non-empty list of items", "input")
    for i, item in enumerate(value if isinstance(value, list) else ()):
        if not isinstance(item, dict):
            raise _bad(f"input[{i}] must be an object", f"input[{i}]")
    for name in ("stream", "store", "parallel_tool_calls"):
        if name in body and body[name] is not None and not isinstance(body[name], bool):
            raise _bad(f"'{name}' must be true or false", name)
    if body.get("instructions") is not None and not isinstance(body["instructions"], str):
        raise _bad("'instructions' must be a string", "instructions")
    for name in ("text", "reasoning", "metadata"):
        if body.get(name) is not None and not isinstance(body[name], dict):
            raise _bad(f"'{name}' must be an object", name)
    if body.get("text") and not isinstance(body["text"].get("format", {}), dict | None):
        raise _bad("'text.format' must be an object", "text.format")
    choice = body.get("tool_choice")
    if choice is not None and not isinstance(choice, str | dict):
        raise _bad("'tool_choice' must be a string or an object", "tool_choice")
    if body.get("include") is not None and not isinstance(body["include"], list):
        raise _bad("'include' must be a list", "include")
    limit = body.get("max_output_tokens")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise _bad("'max_output_tokens' must be a positive integer", "max_output_tokens")
    previous = body.get("previous_response_id")
    if previous is not None and (not isinstance(previous, str) or not previous):
        raise _bad("'previous_response_id' must be a response id", "previous_response_id")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise _bad("'tools' must be a list", "tools")
    for i, tool in enumerate(tools or ()):
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            raise _bad(f"tools[{i}] must be an object with a type", f"tools[{i}]")
        if tool["type"] in ("function", "custom", "namespace") and not isinstance(
            tool.get("name"), str
        ):
            raise _bad(f"tools[{i}]: a {tool['type']} tool needs a name", f"tools[{i}].name")
        if tool["type"] == "namespace" and not isinstance(tool.get("tools"), list):
            raise _bad(f"tools[{i}]: a namespace needs a list of tools", f"tools[{i}].tools")


def parse_responses_request(body, api_key_id, optional_tools=frozenset()) -> ChatRequest:
    """Raise RouterError: 400 naming the first problem, 404 for an unknown previous response."""
    try:
        check_responses_body(body)
    except TranslationError as error:
        raise _invalid(error) from None
    history = []
    if body.get("previous_response_id"):
        history = conversation_items(api_key_id, body["previous_response_id"])
    try:
        chat, source = from_responses_request(body, history, optional_tools)
    except TranslationError as error:
        raise _invalid(error) from None
    key = body.get("prompt_cache_key")
    return replace(
        parse_chat_request(chat),
        source=source,
        conversation=key if isinstance(key, str) and key else None,
    )


def parse_responses_body(raw: bytes, api_key_id, optional_tools=frozenset()) -> ChatRequest:
    """Raw /v1/responses bytes -> ChatRequest, or RouterError (400, 404).

    ``optional_tools``: the built-in tools the client lets the router leave out.
    """
    return parse_responses_request(json_body(raw), api_key_id, optional_tools)


def responses_to_chat(body, history: list = (), optional_tools=frozenset()):
    """(chat body, ResponsesSource): the body checked, then translated after ``history``."""
    check_responses_body(body)
    return from_responses_request(body, history, optional_tools)
