"""The Responses API served through a chat-completions upstream: the answer translated.

For a Responses client (Codex CLI) whose request went to a provider that
does not speak the Responses API (OpenAI-compatible chat, or Claude through
the Anthropic provider's translation): the planned chat body (the wire
builds it, refusing what a chat upstream cannot run or read) goes out, and
the completion and its chunks come back as a ``response`` and the Responses
event stream (``protocols.responses.reply``). The wire (``wire``) takes this
branch by the provider's capabilities; the native branch (``native``)
never imports it.
"""

from routing.protocols.base import StreamReply
from routing.protocols.chunks import translate
from routing.protocols.responses.reply import ResponseEvents, to_response


def answer(source, provider, body: dict, context) -> dict:
    """The chat upstream's completion as the ``response`` the client's ``source`` is answered by."""
    completion = provider.chat(body, context=context)
    return to_response(completion, source, source.response_id, source.model)


def open_stream(source, provider, body: dict, context) -> StreamReply:
    """The chat upstream's chunk stream as Responses events, their translator on the reply.

    The translator ends a stream that broke after it started
    (``ResponseEvents.failed``), numbering on from the events it made.
    """
    reply = provider.chat_stream(body, context=context)
    events = ResponseEvents(source, source.response_id, source.model)
    return StreamReply(reply.response, translate(reply.events, events, provider.name), events)
