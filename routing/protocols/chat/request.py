"""The one schema a chat-completions body is checked against, before any other code sees it.

Hostile or broken bodies (a role that is a list, text that is not UTF-8, ``[``
nested 100,000 deep, a million messages) must end as a 400 in the OpenAI error
shape, never as a crash further down the pipeline. So the raw bytes go through
one step: pydantic-core's JSON parser (which refuses lone surrogates, invalid
UTF-8 and nesting deeper than its recursion limit) and then one pydantic model,
written in the config's style (routing/config/schema.py), strict types.

Only what the router or an upstream relies on is checked: model, messages
(role, content types, tool calls, tool results), stream flags, max tokens,
tools. Every other field, at any level, is left out of the model and kept in
the caller's dict as sent: the dict, not the model, goes upstream, so new
provider parameters pass through untouched and key order is preserved.

Measured with ``bench/bench_parse.py --baseline ae267c8`` on the 368 KB agent
body of corpus session 026 (2 busy cores, medians of 31 interleaved rounds):
0.78 ms for json.loads and the hand-written checks this replaced, 0.60 ms for
this (0.76x): pydantic-core's parser is faster than json.loads, and the
schema's checks run in Rust.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError

from routing.errors import RouterError
from routing.protocols.base import json_body, param_path
from routing.protocols.canonical import ChatRequest
from routing.protocols.chat.inbound import from_translation, to_request
from routing.validation import describe, readable_errors

# Far above any agent session seen (the longest corpus session sends ~1,000);
# a bound keeps one request from holding a thread for seconds of validation.
MAX_MESSAGES = 20_000
# Content parts of all messages together. A part costs some 700 bytes as
# Python objects and a validated model, for a few bytes of JSON: 400,000
# one-character parts (12 MB) once took +285 MB and 2.8 s of CPU. Agents send
# a few parts a message (text, an image, cache blocks).
MAX_PARTS = 50_000


class Open(BaseModel):
    """Strict types for the keys named; every other key is ignored here and passes through."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


# The same for a TypedDict (``with_config(STRICT)``): where a model per item would cost
# too much (the Messages blocks, see routing.protocols.messages.request).
STRICT = ConfigDict(extra="ignore", strict=True)


def by_type(read: dict, other, what: str):
    """A union of objects told apart by their ``type``, open to types still to come.

    A type in ``read`` is checked against its schema, any other type against
    ``other`` (the client's, passed as sent); an object without a string
    ``type`` (or no object) is refused as "a <what> must be an object with a type".
    """

    def kind(value) -> str | None:
        name = value.get("type") if isinstance(value, dict) else None
        if not isinstance(name, str):
            return None
        return name if name in read else "other"

    members = [Annotated[schema, Tag(name)] for name, schema in read.items()]
    return Annotated[
        Union[(*members, Annotated[other, Tag("other")])],  # noqa: UP007 (built, not written)
        Discriminator(
            kind,
            custom_error_type=f"invalid_{what}",
            custom_error_message=f"a {what} must be an object with a type",
        ),
    ]


class ContentPart(Open):
    type: str
    text: str | None = None


Content = str | list[ContentPart] | None


class FunctionCall(Open):
    name: str
    arguments: str


class ToolCall(Open):
    id: str
    type: str = "function"
    function: FunctionCall | None = None


class SystemMessage(Open):
    role: Literal["system", "developer"]
    content: Content = None
    name: str | None = None


class UserMessage(Open):
    role: Literal["user"]
    content: Content = None
    name: str | None = None


class AssistantMessage(Open):
    role: Literal["assistant"]
    content: Content = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None


class ToolMessage(Open):
    role: Literal["tool"]
    content: Content = None
    tool_call_id: str


class FunctionMessage(Open):
    role: Literal["function"]
    content: Content = None
    name: str | None = None


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage | FunctionMessage,
    Field(discriminator="role"),
]


class ToolFunction(Open):
    name: str


class Tool(Open):
    type: str = "function"
    function: ToolFunction | None = None


class StreamOptions(Open):
    include_usage: bool = False


class ChatBody(Open):
    model: str = Field(min_length=1)
    messages: list[Message] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    stream_options: StreamOptions | None = None
    tools: list[Tool] | None = None
    max_tokens: int | None = Field(None, gt=0)
    max_completion_tokens: int | None = Field(None, gt=0)


def _code(error: ValidationError) -> str:
    first = error.errors()[0]
    location = first["loc"]
    if first["type"] == "union_tag_invalid" or (location and location[-1] == "role"):
        return "invalid_role"
    return "invalid_request"


def parse_chat_request(body) -> ChatRequest:
    """Check a parsed JSON body against the schema; raise RouterError(400) naming the problems."""
    if not isinstance(body, dict):
        raise RouterError(400, "The body must be a JSON object", "invalid_request")
    check_part_count(body.get("messages"))
    try:
        checked = ChatBody.model_validate(body)
    except ValidationError as error:
        message, param = schema_error(error, body)
        raise RouterError(400, message, _code(error), param) from None
    return to_request(body, checked)


def translated_request(chat: dict) -> ChatRequest:
    """A translated body (Messages, Responses) as the request; RouterError(400) past the bounds.

    Its own schema checked the client's body; a translation can only grow the
    message count (a turn's tool results become messages of their own).
    """
    if len(chat["messages"]) > MAX_MESSAGES:
        raise RouterError(
            400,
            f"The conversation becomes {len(chat['messages'])} messages; the limit is "
            f"{MAX_MESSAGES}.",
            "invalid_request",
            "messages",
        )
    return from_translation(chat)


def schema_error(error: ValidationError, body) -> tuple[str, str | None]:
    """A body's schema errors as (one line naming each place, the first place named).

    Every protocol's request schema reads its errors here, so a parameter
    path is ``messages[3].role`` on all three, and ``param`` is the first
    place the message names (the deepest where a value had the right shape).
    """
    places = readable_errors(error, body)
    param = param_path(places[0][0]) if places else ""
    return describe(error, body, param_path), param or None


def check_part_count(messages) -> None:
    """RouterError(400) past MAX_PARTS content parts, before the schema builds a model of each."""
    if not isinstance(messages, list):
        return
    parts = 0
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            parts += len(content)
    if parts > MAX_PARTS:
        raise RouterError(
            400,
            f"The messages hold {parts} content parts; the limit is {MAX_PARTS}.",
            "too_many_parts",
            "messages",
        )


def parse_chat_body(raw: bytes) -> ChatRequest:
    """Raw request bytes -> ChatRequest, or RouterError(400); the one step before the pipeline."""
    return parse_chat_request(json_body(raw))
