"""What every protocol's request schema shares: strict open models, bounds, one error wording.

Each protocol checks its body once, against its own schema
(routing.protocols.{chat,messages,responses}.request); what they have in
common is here, apart from all three, so that a Messages or Responses body
is checked and becomes the planned request without passing through the chat
package: the strict-but-open base (``Open``, ``STRICT``), any JSON object
(``Object``), unions told apart by ``type`` (``by_type``), the bounds on a
body's size (``MAX_MESSAGES``, ``MAX_PARTS``), how a schema error reads
(``schema_error``), and a translated chat body as the planned request
(``translated_request``).
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Tag, ValidationError, with_config
from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from routing.errors import RouterError
from routing.protocols.base import param_path
from routing.protocols.canonical import ChatRequest, from_translation
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


@with_config(STRICT)
class Object(TypedDict):
    """Any JSON object, checked as one: pydantic copies a ``dict`` key by key, a TypedDict with
    no fields not at all (the same error for anything else: "must be an object")."""


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


def translated_request(chat: dict, **fields) -> ChatRequest:
    """A translated body (Messages, Responses) as the request, ``fields`` (its ``source``,
    ``conversation``) set; RouterError(400) past the bounds.

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
    return from_translation(chat, **fields)


def schema_error(error: ValidationError, body) -> tuple[str, str | None]:
    """A body's schema errors as (one line naming each place, the first place named).

    Every protocol's request schema reads its errors here, so a parameter
    path is ``messages[3].role`` on all three, and ``param`` is the first
    place the message names (the deepest where a value had the right shape).
    """
    places = readable_errors(error, body)
    param = param_path(places[0][0]) if places else ""
    return describe(error, body, param_path), param or None


def check_part_count(messages) -> int:
    """The content parts of all messages together, counted before the schema checks each;
    RouterError(400) past MAX_PARTS."""
    if not isinstance(messages, list):
        return 0
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
    return parts
