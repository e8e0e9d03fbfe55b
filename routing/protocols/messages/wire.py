"""The Messages API's side of the upstream call: native to Claude models, translated to the rest.

A /v1/messages request was planned like any other (routing.pipeline); here
the dispatcher's ``Wire`` is told how to reach the model it chose, by the
provider's capabilities, on every attempt (a fallback may cross from one
kind to the other):

* a provider that speaks the Messages API (Anthropic) is served natively
  (``native``): the client's own body out, the answer relayed as it comes;
* any other gets the chat-completions translation (``translated``), its
  answer and chunks translated into a Message and Messages events.

Failures leave in Anthropic's error shape, as an HTTP status before the
stream has started and as an ``error`` event after. Also here: the
count_tokens answer, and the ``ClientProtocol`` the endpoint view is given.
"""

import logging

from routing.errors import ProviderError
from routing.forwarding import allowed_headers
from routing.protocols.base import Answer, ClientProtocol
from routing.protocols.messages import errors, translated
from routing.protocols.messages.native import (
    NativeMessagesWire,
    message_answer,
    upstream_request,
)
from routing.protocols.messages.request import parse_body

log = logging.getLogger(__name__)


class MessagesWire(NativeMessagesWire):
    """Native where the provider speaks Messages; translated (``translated``) elsewhere."""

    def answer(self, plan, provider, model, context) -> Answer:
        if provider.capabilities.messages:
            return super().answer(plan, provider, model, context)
        message = translated.answer(plan, provider, model, context)
        return message_answer(message, plan.request.model)

    def open_stream(self, plan, provider, model, context):
        if provider.capabilities.messages:
            return super().open_stream(plan, provider, model, context)
        return translated.open_stream(plan, provider, model, context)


# Generation settings the count_tokens endpoint refuses.
_NOT_COUNTED = ("max_tokens", "stream", "temperature", "top_p", "top_k", "stop_sequences")


def count_tokens(plan, provider) -> dict:
    """``{"input_tokens": n}`` for the (pruned) prompt the plan would send.

    A Claude model asks its upstream, which counts with the real tokenizer;
    any other model, or an upstream that fails, gets the router's estimate
    (the measured tokens routing used).
    """
    model = plan.model
    if provider.capabilities.messages:
        body = upstream_request(plan, model).body
        body = {k: v for k, v in body.items() if k not in _NOT_COUNTED}
        try:
            answer = provider.count_tokens(
                body, allowed_headers(plan.request.source.client_headers, plan.config.forwarding)
            )
            if isinstance(answer.get("input_tokens"), int):
                return {"input_tokens": answer["input_tokens"]}
        except ProviderError as error:
            log.warning("count_tokens_estimated model=%s reason=%s", model.id, error.message)
    return {"input_tokens": plan.measured_tokens}


# The Anthropic Messages API, for Claude Code (ANTHROPIC_BASE_URL at the router).
MESSAGES = ClientProtocol(parse_body, MessagesWire(), errors.router_error_response)
