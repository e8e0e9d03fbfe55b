"""The Messages API served through a chat-completions upstream: the request and answer translated.

For a Claude client whose request went to any provider that does not speak
the Messages API: the planned chat-completions body goes out (refused with a
400 when the client's body holds what chat completions has no place for),
and the completion and its chunks come back as a Message and Messages events
(``protocols.messages.reply``). The wire (``wire``) takes this branch by the
provider's capabilities; the native branch (``native``) never imports it.
"""

from routing.errors import ProviderError
from routing.protocols.base import StreamReply
from routing.protocols.chunks import translate
from routing.protocols.messages.errors import anthropic_error_body
from routing.protocols.messages.reply import MessageEvents, to_message


def untranslatable_error(plan, provider, model) -> ProviderError:
    what = "; ".join(plan.request.source.untranslatable)
    message = (
        f"The model {model.id!r} (provider {provider.name!r}) speaks chat completions, "
        f"which has no place for: {what}. Use a Claude model for this request."
    )
    return ProviderError("status", message, 400, anthropic_error_body(400, message))


def _chat_body(plan, provider, model) -> dict:
    if plan.request.source.untranslatable:
        raise untranslatable_error(plan, provider, model)
    return {**plan.upstream_body, "model": model.send_as}


def answer(plan, provider, model, context) -> dict:
    """The chat upstream's completion as a Message named as the client asked."""
    completion = provider.chat(_chat_body(plan, provider, model), context=context)
    return to_message(completion, plan.request.model)


def open_stream(plan, provider, model, context) -> StreamReply:
    """The chat upstream's chunk stream as Messages events."""
    reply = provider.chat_stream(_chat_body(plan, provider, model), context=context)
    # Anthropic sends a ping after message_start; clients expect to ignore some.
    events = MessageEvents(plan.request.model)
    events = translate(reply.events, events, provider.name, ({"type": "ping"},))
    return StreamReply(reply.response, events)
