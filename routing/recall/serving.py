"""The provider as the dispatcher calls it when pinch is on: the recall loop around each call.

The loop runs in the upstream's shape, around the call a wire makes, so it
sits below every client-protocol translation and the wires do not know of
it: the dispatcher wraps the provider it is about to call (``recalling``),
and the wrapper adds the router's tool to the body and answers its calls.
Chat-completions calls (OpenAI-compatible upstreams, and the Anthropic
provider's translated path) loop in ``chat``; a native Messages call in
``messages``; a native Responses call in ``responses``.
"""

from routing.recall import chat, messages, responses
from routing.recall.answers import Recalls
from routing.recall.tool import offers_tool


def serves_recall(plan) -> bool:
    """Pinch is on for the request's conversation (not the holdout) and recall is enabled."""
    return plan.pinch is not None and offers_tool(plan.config.pinch)


def recalling(provider, plan, outcome):
    """``provider`` as the dispatcher should call it for ``plan``: with the recall loop or not."""
    if not serves_recall(plan):
        return provider
    return RecallingProvider(provider, Recalls(plan, outcome))


class RecallingProvider:
    """A provider whose calls answer the router's tool themselves; the rest is the provider's."""

    def __init__(self, provider, recalls: Recalls):
        self._provider = provider
        self._recalls = recalls

    def __getattr__(self, name):
        return getattr(self._provider, name)

    def chat(self, body: dict, timeout: float | None = None, context=None) -> dict:
        def call(sent):
            return self._provider.chat(sent, timeout=timeout, context=context)

        return chat.complete(call, body, self._recalls)

    def chat_stream(self, body: dict, context=None):
        return chat.stream(
            lambda sent: self._provider.chat_stream(sent, context=context), body, self._recalls
        )

    def messages(self, request, context, headers: dict) -> dict:
        def call(sent):
            return self._provider.messages(sent, context, headers)

        return messages.complete(call, request, self._recalls)

    def messages_stream(self, request, context, headers: dict):
        def call(sent):
            return self._provider.messages_stream(sent, context, headers)

        return messages.stream(call, request, self._recalls)

    def responses(self, body: dict) -> dict:
        return responses.complete(self._provider.responses, body, self._recalls)

    def responses_stream(self, body: dict):
        return responses.stream(self._provider.responses_stream, body, self._recalls)
