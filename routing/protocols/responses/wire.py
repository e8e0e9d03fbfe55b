"""The Responses API's side of the upstream call: native where it is spoken, translated elsewhere.

A /v1/responses request was planned like any other (routing.pipeline); here
the dispatcher's ``Wire`` is told how to reach the model it chose, by the
provider's capabilities, on every attempt (a fallback may cross from one
kind to the other):

* a provider with ``responses_api: true`` (OpenAI) is served natively
  (``native``): the client's own body out, the answer relayed as it comes;
* any other provider (OpenAI-compatible chat, or Claude through the Anthropic
  provider's translation) gets the chat-completions translation, and its
  answer and chunks become a ``response`` and the Responses event stream
  (``translated``). Built-in tools it cannot run are left out
  (``responses.hosted_tools: omit``, the default; named in the
  ``X-Router-Omitted-Tools`` header and on the decision row), or, under
  ``refuse``, a 400 naming them unless the client listed them in
  ``X-Router-Optional-Tools``. Reasoning items are left out with a log line.

The refusal (and which tools are left out) is decided for the chosen model
before the decision exists, by the completion service through ``refusal``;
a fallback candidate that cannot take the request fails its attempt here.
A finished response the client did not mark ``store: false`` is handed
over to be kept with its decision (routing/recording/stored.py writes it)
for ``previous_response_id``. Failures leave in the
OpenAI error shape before the stream has started, and as ``response.failed``
(or an ``error`` event, on a native stream) after.
"""

import logging

from routing.errors import RouterError
from routing.protocols.base import Answer, ClientProtocol, StreamReply
from routing.protocols.responses import errors, translated
from routing.protocols.responses.native import NativeResponsesWire, response_answer
from routing.protocols.responses.request import parse_body

log = logging.getLogger(__name__)


def _refusal(source, model, provider) -> str | None:
    """Why ``model`` cannot take this request, or None."""
    if provider.capabilities.responses or not source.needs_native:
        return None
    what = "; ".join(
        [f"built-in tool {t!r}" for t in source.refused_tools] + list(source.untranslatable)
    )
    return (
        f"The model {model.id!r} (provider {provider.name!r}) is not served through the "
        f"Responses API and cannot run or read: {what}. Use a model whose provider has "
        "responses_api: true, or send X-Router-Optional-Tools naming the built-in tools "
        "the router may leave out (or set responses.hosted_tools: omit)."
    )


def refusal(plan) -> RouterError | None:
    """The 400 for a request the plan's model cannot be sent, before any row; else None."""
    message = _refusal(plan.request.source, plan.model, plan.providers[0])
    return None if message is None else RouterError(400, message, "unsupported_tool", "tools")


def _chat_body(plan, provider, model) -> dict:
    source = plan.request.source
    message = _refusal(source, model, provider)
    if message is not None:
        # A fallback candidate that cannot take what the first one could.
        raise errors.unsupported_tool_error(message)
    if source.builtin_tools:
        log.info(
            "responses_tools_dropped model=%s tools=%s", model.id, ",".join(source.builtin_tools)
        )
    if source.dropped_reasoning:
        log.info(
            "responses_reasoning_dropped model=%s items=%d", model.id, source.dropped_reasoning
        )
    body = {**plan.upstream_body, "model": model.send_as}
    if not provider.capabilities.messages:
        # Claude's thinking blocks mean something to Claude alone.
        body["messages"] = [
            {k: v for k, v in m.items() if k != "thinking_blocks"} for m in body["messages"]
        ]
    return body


class ResponsesWire(NativeResponsesWire):
    """Native where the provider speaks Responses; translated (``translated``) elsewhere."""

    def answer(self, plan, provider, model, context) -> Answer:
        if provider.capabilities.responses:
            return super().answer(plan, provider, model, context)
        response = translated.answer(
            plan.request.source, provider, _chat_body(plan, provider, model), context
        )
        return response_answer(response, plan)

    def open_stream(self, plan, provider, model, context) -> StreamReply:
        if provider.capabilities.responses:
            return super().open_stream(plan, provider, model, context)
        body = _chat_body(plan, provider, model)
        return translated.open_stream(plan.request.source, provider, body, context)


# The OpenAI Responses API, for Codex CLI and the openai-agents SDK.
RESPONSES = ClientProtocol(parse_body, ResponsesWire(), errors.router_error_response, refusal)
