"""A /v1/messages body as the request the pipeline plans on.

The Messages body is checked and translated by the protocol package
(routing.protocols.anthropic.inbound); the chat-completions body that comes
out goes through the same schema as a /v1/chat/completions body, and the
client's original rides along as the request's ``source``.
"""

from dataclasses import replace

from routing.chat_request import ChatRequest, json_body, parse_chat_request
from routing.errors import RouterError
from routing.protocols.anthropic.inbound import from_messages_request
from routing.protocols.anthropic.request import TranslationError


def parse_messages_request(body, count_only: bool = False) -> ChatRequest:
    """Raise RouterError(400) naming the first problem; ``count_only``: no max_tokens needed."""
    try:
        chat, source = from_messages_request(body, count_only)
    except TranslationError as error:
        raise RouterError(400, error.message, "invalid_request", error.param) from None
    return replace(parse_chat_request(chat), source=source)


def parse_messages_body(raw: bytes, count_only: bool = False) -> ChatRequest:
    """Raw /v1/messages bytes -> ChatRequest, or RouterError(400)."""
    return parse_messages_request(json_body(raw), count_only)
