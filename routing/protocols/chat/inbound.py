"""A checked chat-completions body as the request the pipeline plans on.

Chat completions is the pipeline's own form: the body's messages are planned
on as sent, and the dict (not the schema's model) goes upstream, so fields
the schema does not name pass through untouched.
"""

from routing.protocols.canonical import ChatRequest


def to_request(body: dict, checked, parts: int | None = None) -> ChatRequest:
    """``checked``: the body's ChatBody (routing.protocols.chat.request); ``parts``: the
    content parts its messages hold (routing.protocols.schema.check_part_count), if counted."""
    return ChatRequest(
        body=body,
        model=checked.model,
        messages=body["messages"],
        stream=checked.stream,
        include_usage=bool(checked.stream_options and checked.stream_options.include_usage),
        max_tokens=checked.max_completion_tokens or checked.max_tokens or 0,
        tools=body.get("tools") or None,
        has_parts=None if parts is None else parts > 0,
    )
