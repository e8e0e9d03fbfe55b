"""A /v1/responses body as the request the pipeline plans on.

The Responses body is checked and translated by the protocol package
(routing.protocols.responses.inbound), after the stored conversation a
``previous_response_id`` names; the chat-completions body that comes out
goes through the same schema as a /v1/chat/completions body, and the
client's items ride along as the request's ``source``. ``prompt_cache_key``,
when the client sends one, is the conversation's key for the prefix probe.
"""

from dataclasses import replace

from routing.chat_request import ChatRequest, json_body, parse_chat_request
from routing.errors import RouterError
from routing.protocols.anthropic.request import TranslationError
from routing.protocols.responses.inbound import check_responses_body, from_responses_request
from routing.responses_store import conversation_items


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
