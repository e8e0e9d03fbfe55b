"""A /v1/messages body: its one schema, and its parse into the request the pipeline plans on.

As for a chat body (routing.protocols.chat.request), the bytes are parsed
as pydantic-core's JSON parser reads them (routing.jsonio.loads_request) and
then go through one strict pydantic model, so a broken or hostile body ends
as a 400 in Anthropic's shape naming the field in the one path style
(``messages[3].role``), never as a crash further down.

Only what the router or an upstream relies on is checked: model,
max_tokens, the turns (their role, their content's blocks: the type of
each, and the fields the router reads of a ``text``, ``image``,
``tool_use`` and ``tool_result`` block), the system prompt, tools, the
generation settings' types. Every other field, at any level, is left out of
the model and passes as sent, and a block of a type the router does not
read (``thinking``, ``document``, server-tool blocks, the next new one) is
only required to be an object with a type: Claude Code and the SDKs send
many such, and the dict, not the model, goes on. The body is then
translated (routing.protocols.messages.inbound) into the planned request
without a second check (routing.protocols.schema.translated_request), the
client's original riding along as the request's ``source``, with the
Anthropic headers the client sent.
"""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired

from pydantic import (
    BeforeValidator,
    Field,
    ValidationError,
    with_config,
)
from pydantic_core import PydanticCustomError
from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from routing.errors import RouterError
from routing.protocols.base import TranslationError, json_body
from routing.protocols.canonical import ChatRequest
from routing.protocols.messages.inbound import from_messages_request
from routing.protocols.schema import (
    MAX_MESSAGES,
    STRICT,
    Object,
    Open,
    by_type,
    check_part_count,
    schema_error,
    translated_request,
)

# Headers of the client's request that go on to an Anthropic upstream.
FORWARDED_HEADERS = {
    "anthropic-beta": "HTTP_ANTHROPIC_BETA",
    "anthropic-version": "HTTP_ANTHROPIC_VERSION",
}

# A block, a turn or a tool is a TypedDict, not a model: the same strict checks, a third
# of the time (a model instance per block cost 0.58 ms on session 026's 368 KB
# body, TypedDicts 0.20 ms).


@with_config(STRICT)
class TextBlock(TypedDict):
    text: str


@with_config(STRICT)
class ImageBlock(TypedDict):
    source: Object


@with_config(STRICT)
class ToolUseBlock(TypedDict):
    id: str
    name: str
    input: Object


@with_config(STRICT)
class ToolResultBlock(TypedDict):
    tool_use_id: str
    content: NotRequired[str | list[Block] | None]


@with_config(STRICT)
class OtherBlock(TypedDict):
    """Thinking, documents, server-tool blocks, types still to come: an object with a type."""


# The block types whose fields the router reads; any other passes as sent.
Block = by_type(
    {
        "text": TextBlock,
        "image": ImageBlock,
        "tool_use": ToolUseBlock,
        "tool_result": ToolResultBlock,
    },
    OtherBlock,
    "block",
)
Content = str | list[Block]


def _text_only(content):
    """A system turn's content as sent, refused if it holds a block that is not text."""
    if isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") != "text" for block in content
    ):
        raise PydanticCustomError("system_blocks", "a system message holds text blocks only")
    return content


@with_config(STRICT)
class UserTurn(TypedDict):
    role: Literal["user"]
    content: Content


@with_config(STRICT)
class AssistantTurn(TypedDict):
    role: Literal["assistant"]
    content: Content


@with_config(STRICT)
class SystemTurn(TypedDict):
    # Claude Code sends one (beta mid-conversation-system-2026-04-07) when its
    # model name is not a Claude one; it is text only.
    role: Literal["system"]
    content: Annotated[Content, BeforeValidator(_text_only)]


Turn = Annotated[UserTurn | AssistantTurn | SystemTurn, Field(discriminator="role")]


@with_config(STRICT)
class Tool(TypedDict):
    name: str


class CountTokensBody(Open):
    """A body for /v1/messages/count_tokens: a conversation, no max_tokens needed."""

    model: str = Field(min_length=1)
    messages: list[Turn] = Field(min_length=1, max_length=MAX_MESSAGES)
    system: Content | None = None
    stream: bool = False
    tools: list[Tool] | None = None
    tool_choice: dict | None = None
    metadata: dict | None = None
    stop_sequences: list[str] | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: float | None = None


class MessagesBody(CountTokensBody):
    max_tokens: int = Field(gt=0)


def check_messages_body(body, count_only: bool = False) -> None:
    """Raise TranslationError naming the first field the router cannot work with."""
    if not isinstance(body, dict):
        raise TranslationError("The body must be a JSON object")
    try:
        (CountTokensBody if count_only else MessagesBody).model_validate(body)
    except ValidationError as error:
        raise TranslationError(*schema_error(error, body)) from None


def messages_to_chat(body, count_only: bool = False, client_headers: dict | None = None):
    """(chat body, MessagesSource) for a body; TranslationError naming the first problem."""
    check_messages_body(body, count_only)
    return from_messages_request(body, count_only, client_headers)


def forwarded_headers(meta) -> dict:
    """The client's Anthropic headers, from a Django request's META."""
    return {name: meta[key] for name, key in FORWARDED_HEADERS.items() if key in meta}


def parse_messages_request(
    body, count_only: bool = False, client_headers: dict | None = None
) -> ChatRequest:
    """Raise RouterError(400) naming the first problem; ``count_only``: no max_tokens needed."""
    check_part_count(body.get("messages") if isinstance(body, dict) else None)
    try:
        chat, source = messages_to_chat(body, count_only, client_headers)
    except TranslationError as error:
        raise RouterError(400, error.message, "invalid_request", error.param) from None
    return translated_request(chat, source=source)


def parse_messages_body(raw: bytes, count_only: bool = False, meta=None) -> ChatRequest:
    """Raw /v1/messages bytes -> ChatRequest, or RouterError(400); ``meta``: the request's
    META, whose Anthropic headers go on with the request."""
    return parse_messages_request(json_body(raw), count_only, forwarded_headers(meta or {}))


def parse_body(raw: bytes, meta, api_key_id) -> ChatRequest:
    """The protocol's parse (routing.protocols.base.ClientProtocol)."""
    return parse_messages_body(raw, meta=meta)
