"""Reading a chat-completions chunk stream on behalf of another client protocol.

Both inbound adapters that answer from a chat upstream (the Messages API's
``MessageEvents``, the Responses API's ``ResponseEvents``) read the same
chunks the same way: the first one starts the answer, reasoning, text and
tool-call pieces arrive in ``delta``s, the finish reason and usage come last, and
``[DONE]`` ends it. ``ChunkEvents`` does that reading once; a subclass says
what its protocol makes of each piece. ``translate`` is the relay loop.
"""

from routing.errors import ProviderError
from routing.protocols.base import Event


class ChunkEvents:
    """Feed chat-completions chunks in order; get the client protocol's events each one makes."""

    def __init__(self):
        self.started = False
        self.finish = None
        self.usage: dict = {}

    def start(self) -> list[dict]:
        """The events that open the answer, once (a subclass adds its own)."""
        if self.started:
            return []
        self.started = True
        return self.opening()

    def feed(self, chunk: dict) -> list[dict]:
        events = self.start()
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        # Whatever a chat upstream sends, the client gets valid events: odd shapes are skipped.
        choices = chunk.get("choices") if isinstance(chunk.get("choices"), list) else []
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
            if isinstance(delta.get("reasoning_content"), str) and delta["reasoning_content"]:
                events += self.reasoning(delta["reasoning_content"])
            if isinstance(delta.get("thinking_blocks"), list):
                events += self.thinking(delta["thinking_blocks"])
            if isinstance(delta.get("content"), str) and delta["content"]:
                events += self.text(delta["content"])
            if isinstance(delta.get("refusal"), str) and delta["refusal"]:
                events += self.refusal(delta["refusal"])
            calls = delta.get("tool_calls") if isinstance(delta.get("tool_calls"), list) else []
            for call in calls:
                if isinstance(call, dict):
                    events += self.tool(call)
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]
        return events

    def opening(self) -> list[dict]:
        raise NotImplementedError

    def text(self, text: str) -> list[dict]:
        raise NotImplementedError

    def refusal(self, text: str) -> list[dict]:
        """The model's refusal (``delta.refusal``); as text unless overridden."""
        return self.text(text)

    def reasoning(self, text: str) -> list[dict]:
        """The model's reasoning, as text (``reasoning_content``); left out unless overridden."""
        return []

    def thinking(self, blocks: list) -> list[dict]:
        """Finished Claude thinking blocks, signatures included (``thinking_blocks``)."""
        return []

    def tool(self, call: dict) -> list[dict]:
        raise NotImplementedError

    def end(self) -> list[dict]:
        raise NotImplementedError


def translate(chunks, translator: ChunkEvents, provider_name: str, after_start=()):
    """Chat chunk events in, the client's events out (typed, serialised at the edge).

    A stream cut short raises. ``after_start``: events sent once, after those
    of the first chunk (the Messages API's ``ping``).
    """
    for chunk in chunks:
        if chunk.done:
            for event in translator.end():
                yield Event.of(event, named=True)
            return
        if chunk.data is None:
            continue
        first = not translator.started
        for event in translator.feed(chunk.data):
            yield Event.of(event, named=True)
        if first:
            for event in after_start:
                yield Event.of(event, named=True)
    raise ProviderError("connect", f"provider {provider_name!r} stream ended mid-answer")
