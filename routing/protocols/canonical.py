"""The request the pipeline plans on, whatever protocol the client spoke.

Every protocol's inbound turns its body into a ``ChatRequest``: the messages
in chat-completions form (what pinch, the classifier and the token count
read), the generation settings routing needs, and, when the client did not
speak chat completions, its own request as ``source`` (a MessagesSource or a
ResponsesSource), which a native upstream is sent with pinch's changes
mapped back onto it.
"""

from dataclasses import dataclass
from functools import cached_property
from typing import Protocol


class Source(Protocol):
    """The client's own request, kept beside the chat-completions form (see canonical.py).

    Plain fields, read by the plan and the wire without calling back into the
    protocol's package.
    """

    body: dict
    untranslatable: tuple
    left_out_tokens: int  # the prompt in parts the chat messages leave out
    needs_native: bool  # only an upstream that speaks the client's protocol can serve it
    native_capability: str  # which Capabilities flag says a provider does (routing.providers)
    builtin_tools: tuple  # built-in tools left out for an upstream that cannot run them


@dataclass(frozen=True)
class ChatRequest:
    body: dict
    model: str
    messages: list
    stream: bool
    include_usage: bool
    max_tokens: int
    tools: list | None
    # The request in the client's own protocol when that is not chat
    # completions (a MessagesSource for /v1/messages): what an upstream of that
    # protocol is sent, with pinch's changes mapped back onto it.
    source: Source | None = None
    # The client's own name for the conversation (the Responses API's
    # prompt_cache_key), when it gives one: the prefix probe's key then.
    conversation: str | None = None
    # False when the parse found no message whose content is a list of parts (and so no
    # image): has_images then walks none of them. None: not known.
    has_parts: bool | None = None

    # Cached: planning, the model's choice and the capability check all ask (one walk).
    @cached_property
    def has_images(self) -> bool:
        if self.has_parts is False:
            return False
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, list):
                for part in content:
                    if isinstance(part, dict) and part.get("type") in ("image_url", "input_image"):
                        return True
        return False

    @property
    def wants_json(self) -> bool:
        response_format = self.body.get("response_format")
        return isinstance(response_format, dict) and response_format.get("type") in (
            "json_object",
            "json_schema",
        )

    @cached_property
    def needed_capabilities(self) -> set[str]:
        needed = set()
        if self.has_images:
            needed.add("vision")
        if self.wants_json:
            needed.add("json_mode")
        if self.tools:
            needed.add("tools")
        return needed


def from_translation(chat: dict, **fields) -> ChatRequest:
    """A chat body the router wrote from a Messages or Responses body, as the request, with
    ``fields`` (the client's ``source``, its ``conversation``).

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
        **fields,
    )
