"""A /v1/responses body: its one schema, and its parse into the request the pipeline plans on.

The body is checked once, here, against one strict pydantic model, as a chat
body is (routing.protocols.chat.request): only what the router or an
upstream relies on (model, the types of ``input``, the flags, the settings,
a tool's type and the name a function, custom or namespace tool needs); the
rest passes as sent, built-in tools of any type included. A problem is a 400
naming the field in the one path style (``tools[0].name``). Then the stored
conversation a ``previous_response_id`` names is read, and the body
translated (routing.protocols.responses.inbound), which reads each item and
refuses a malformed one by name (``input[3].role``), a stored item as much
as a sent one. The chat-completions body that comes
out is the planned request without a second check
(routing.protocols.schema.translated_request), and the client's items ride
along as the request's ``source``. ``prompt_cache_key``,
when the client sends one, is the conversation's key for the prefix probe.
"""

from __future__ import annotations

from pydantic import Field, ValidationError, with_config
from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from routing.config.store import api_config
from routing.errors import RouterError
from routing.protocols.base import TranslationError, json_body
from routing.protocols.canonical import ChatRequest
from routing.protocols.responses.inbound import from_responses_request
from routing.protocols.responses.store import conversation_items
from routing.protocols.schema import STRICT, Open, by_type, schema_error, translated_request

OPTIONAL_TOOLS_HEADER = "HTTP_X_ROUTER_OPTIONAL_TOOLS"

# Tools and items are TypedDicts, not models: the same strict checks, a third of the
# time (see routing.protocols.messages.request).


@with_config(STRICT)
class NamedTool(TypedDict):
    name: str


@with_config(STRICT)
class NamespaceTool(TypedDict):
    name: str
    tools: list


@with_config(STRICT)
class BuiltinTool(TypedDict):
    """web_search, file_search, local_shell, types still to come: an object with a type."""


# Function, custom and namespace tools need a name; built-in ones of any type pass.
Tool = by_type(
    {"function": NamedTool, "custom": NamedTool, "namespace": NamespaceTool}, BuiltinTool, "tool"
)


@with_config(STRICT)
class Item(TypedDict):
    """An input item: an object (read, and refused by name, where it is translated).

    A TypedDict with no fields, not ``dict``: pydantic copies a ``dict`` key by
    key, five times the cost on Codex's bodies (0.05 ms for 201 items).
    """


class TextConfig(Open):
    format: dict | None = None


class ResponsesBody(Open):
    model: str = Field(min_length=1)
    # The items are read where they are translated, with the stored history they follow.
    input: str | list[Item] = ""
    instructions: str | None = None
    previous_response_id: str | None = Field(None, min_length=1)
    stream: bool | None = None
    store: bool | None = None
    parallel_tool_calls: bool | None = None
    text: TextConfig | None = None
    reasoning: dict | None = None
    metadata: dict | None = None
    tool_choice: str | dict | None = None
    include: list | None = None
    max_output_tokens: int | None = Field(None, gt=0)
    tools: list[Tool] | None = None


def check_responses_body(body) -> None:
    """Raise TranslationError naming the first field the router cannot work with."""
    if not isinstance(body, dict):
        raise TranslationError("The body must be a JSON object")
    try:
        checked = ResponsesBody.model_validate(body)
    except ValidationError as error:
        raise TranslationError(*schema_error(error, body)) from None
    if not checked.input and not checked.previous_response_id:
        raise TranslationError("input: required (a string or a non-empty list of items)", "input")


def _invalid(error: TranslationError) -> RouterError:
    return RouterError(400, error.message, "invalid_request", error.param)


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
        chat, source = from_responses_request(body, history, optional_tools, api_key_id)
    except TranslationError as error:
        raise _invalid(error) from None
    key = body.get("prompt_cache_key")
    return translated_request(
        chat, source=source, conversation=key if isinstance(key, str) and key else None
    )


def parse_responses_body(raw: bytes, api_key_id, optional_tools=frozenset()) -> ChatRequest:
    """Raw /v1/responses bytes -> ChatRequest, or RouterError (400, 404).

    ``optional_tools``: the built-in tools the client lets the router leave out.
    """
    return parse_responses_request(json_body(raw), api_key_id, optional_tools)


def optional_tools(meta, config) -> frozenset:
    """Built-in tool types the router may leave out (``*``: all of them).

    All, under ``responses.hosted_tools: omit``; else those the client lists.
    """
    if config.responses.hosted_tools == "omit":
        return frozenset({"*"})
    value = meta.get(OPTIONAL_TOOLS_HEADER, "")
    return frozenset(name.strip() for name in value.split(",") if name.strip())


def parse_body(raw: bytes, meta, api_key_id) -> ChatRequest:
    """The protocol's parse (routing.protocols.base.ClientProtocol)."""
    return parse_responses_body(raw, api_key_id, optional_tools(meta, api_config()))


def responses_to_chat(body, history: list = (), optional_tools=frozenset()):
    """(chat body, ResponsesSource): the body checked, then translated after ``history``."""
    check_responses_body(body)
    return from_responses_request(body, history, optional_tools)
