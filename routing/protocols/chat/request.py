"""The one schema a chat-completions body is checked against, before any other code sees it.

Hostile or broken bodies (a role that is a list, text that is not UTF-8, ``[``
nested 100,000 deep, a million messages) must end as a 400 in the OpenAI error
shape, never as a crash further down the pipeline. So the raw bytes go through
one step: a JSON parse that reads as pydantic-core's parser does
(routing.jsonio.loads_request: it refuses lone surrogates, invalid UTF-8 and
nesting deeper than its recursion limit) and then one pydantic model,
written in the config's style (routing/config/schema.py), strict types; what
it holds (messages, their parts and calls, tools) are TypedDicts, checked as
strictly without a model instance built of each (nothing would read it).

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

from typing import Annotated, Literal, NotRequired

from pydantic import Field, ValidationError, with_config
from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from routing.errors import RouterError
from routing.protocols.base import json_body
from routing.protocols.canonical import ChatRequest
from routing.protocols.chat.inbound import to_request
from routing.protocols.schema import MAX_MESSAGES, STRICT, Open, check_part_count, schema_error

# A part, a call, a message or a tool is a TypedDict, not a model: the same checks and
# the same errors, without a model instance per item (the dict goes upstream, not the
# model): on session 026's 368 KB body 0.155 -> 0.069 ms.


@with_config(STRICT)
class ContentPart(TypedDict):
    type: str
    text: NotRequired[str | None]


Content = str | list[ContentPart] | None


@with_config(STRICT)
class FunctionCall(TypedDict):
    name: str
    arguments: str


@with_config(STRICT)
class ToolCall(TypedDict):
    id: str
    type: NotRequired[str]
    function: NotRequired[FunctionCall | None]


@with_config(STRICT)
class SystemMessage(TypedDict):
    role: Literal["system", "developer"]
    content: NotRequired[Content]
    name: NotRequired[str | None]


@with_config(STRICT)
class UserMessage(TypedDict):
    role: Literal["user"]
    content: NotRequired[Content]
    name: NotRequired[str | None]


@with_config(STRICT)
class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: NotRequired[Content]
    name: NotRequired[str | None]
    tool_calls: NotRequired[list[ToolCall] | None]


@with_config(STRICT)
class ToolMessage(TypedDict):
    role: Literal["tool"]
    content: NotRequired[Content]
    tool_call_id: str


@with_config(STRICT)
class FunctionMessage(TypedDict):
    role: Literal["function"]
    content: NotRequired[Content]
    name: NotRequired[str | None]


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage | FunctionMessage,
    Field(discriminator="role"),
]


@with_config(STRICT)
class ToolFunction(TypedDict):
    name: str


@with_config(STRICT)
class Tool(TypedDict):
    type: NotRequired[str]
    function: NotRequired[ToolFunction | None]


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
    parts = check_part_count(body.get("messages"))
    try:
        checked = ChatBody.model_validate(body)
    except ValidationError as error:
        message, param = schema_error(error, body)
        raise RouterError(400, message, _code(error), param) from None
    return to_request(body, checked, parts)


def parse_chat_body(raw: bytes) -> ChatRequest:
    """Raw request bytes -> ChatRequest, or RouterError(400); the one step before the pipeline."""
    return parse_chat_request(json_body(raw))


def parse_body(raw: bytes, meta, api_key_id) -> ChatRequest:
    """The protocol's parse (routing.protocols.base.ClientProtocol)."""
    return parse_chat_body(raw)
