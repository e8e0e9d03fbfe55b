"""The request the pipeline plans on, whatever protocol the client spoke.

Every protocol's inbound turns its body into a ``ChatRequest``: the messages
in chat-completions form (what pinch, the classifier and the token count
read), the generation settings routing needs, and, when the client did not
speak chat completions, its own request as ``source`` (a MessagesSource or a
ResponsesSource), which a native upstream is sent with pinch's changes
mapped back onto it.
"""

from dataclasses import dataclass
from typing import Protocol


class Source(Protocol):
    """The client's own request, kept beside the chat-completions form (see canonical.py)."""

    body: dict
    untranslatable: tuple
    left_out_tokens: int  # the prompt in parts the chat messages leave out

    @property
    def needs_native(self) -> bool: ...

    def served_natively(self, capabilities) -> bool:
        """Whether a provider with these capabilities takes this request as sent."""
        ...


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

    @property
    def has_images(self) -> bool:
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

    @property
    def needed_capabilities(self) -> set[str]:
        needed = set()
        if self.has_images:
            needed.add("vision")
        if self.wants_json:
            needed.add("json_mode")
        if self.tools:
            needed.add("tools")
        return needed
