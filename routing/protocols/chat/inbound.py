"""A checked chat-completions body as the request the pipeline plans on.

Chat completions is the pipeline's own form: the body's messages are planned
on as sent, and the dict (not the schema's model) goes upstream, so fields
the schema does not name pass through untouched.
"""

from routing.protocols.canonical import ChatRequest


def to_request(body: dict, checked) -> ChatRequest:
    """``checked``: the body's ChatBody (routing.protocols.chat.request)."""
    return ChatRequest(
        body=body,
        model=checked.model,
        messages=body["messages"],
        stream=checked.stream,
        include_usage=bool(checked.stream_options and checked.stream_options.include_usage),
        max_tokens=checked.max_completion_tokens or checked.max_tokens or 0,
        tools=body.get("tools") or None,
    )


def from_translation(chat: dict) -> ChatRequest:
    """A chat body the router wrote from a Messages or Responses body, as the request.

    That body was checked by its own protocol's schema, and the translator
    writes every field read here (model, messages, stream, max_tokens, tools),
    so nothing is checked a second time.
    """
    options = chat.get("stream_options")
    return ChatRequest(
        body=chat,
        model=chat["model"],
        messages=chat["messages"],
        stream=chat.get("stream") is True,
        include_usage=isinstance(options, dict) and options.get("include_usage") is True,
        max_tokens=chat.get("max_tokens") or 0,
        tools=chat.get("tools") or None,
    )
