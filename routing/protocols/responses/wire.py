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

A finished response the client did not mark ``store: false`` is kept
(routing.protocols.responses.store) for ``previous_response_id``. Failures leave in the
OpenAI error shape before the stream has started, and as ``response.failed``
(or an ``error`` event, on a native stream) after.
"""

import logging

from routing.config.store import api_config
from routing.errors import RouterError
from routing.protocols.base import ClientProtocol, named_sse
from routing.protocols.responses import errors, translated
from routing.protocols.responses.native import NativeResponsesWire
from routing.protocols.responses.request import parse_responses_body

log = logging.getLogger(__name__)

OPTIONAL_TOOLS_HEADER = "HTTP_X_ROUTER_OPTIONAL_TOOLS"


def optional_tools(request, config) -> frozenset:
    """Built-in tool types the router may leave out (``*``: all of them).

    All, under ``responses.hosted_tools: omit``; else those the client lists.
    """
    if config.responses.hosted_tools == "omit":
        return frozenset({"*"})
    value = request.META.get(OPTIONAL_TOOLS_HEADER, "")
    return frozenset(name.strip() for name in value.split(",") if name.strip())


class ResponsesWire(NativeResponsesWire):
    """Native where the provider speaks Responses; translated (``translated``) elsewhere."""

    def __init__(self, request, api_key_id, store_ttl_hours: float):
        super().__init__(request, api_key_id, store_ttl_hours)
        self.events = None  # the translator of a translated stream

    # What a chat upstream cannot be sent.

    def _refusal(self, model, provider) -> str | None:
        """Why ``model`` cannot take this request, or None."""
        if provider.capabilities.responses:
            return None
        source = self.source
        refused = source.refused_tools
        if not source.needs_native:
            return None
        what = "; ".join([f"built-in tool {t!r}" for t in refused] + list(source.untranslatable))
        return (
            f"The model {model.id!r} (provider {provider.name!r}) is not served through the "
            f"Responses API and cannot run or read: {what}. Use a model whose provider has "
            "responses_api: true, or send X-Router-Optional-Tools naming the built-in tools "
            "the router may leave out (or set responses.hosted_tools: omit)."
        )

    def check(self, plan, provider) -> None:
        message = self._refusal(plan.model, provider)
        if message is not None:
            raise RouterError(400, message, "unsupported_tool", "tools")
        if not provider.capabilities.responses:
            plan.omitted_tools = tuple(self.source.builtin_tools)

    def _chat_body(self, plan, provider, model) -> dict:
        message = self._refusal(model, provider)
        if message is not None:
            # A fallback candidate that cannot take what the first one could.
            raise errors.unsupported_tool_error(message)
        source = self.source
        if source.builtin_tools:
            log.info(
                "responses_tools_dropped model=%s tools=%s",
                model.id,
                ",".join(source.builtin_tools),
            )
        if source.dropped_reasoning:
            log.info(
                "responses_reasoning_dropped model=%s items=%d", model.id, source.dropped_reasoning
            )
        body = plan.upstream_body(model)
        if not provider.capabilities.messages:
            # Claude's thinking blocks mean something to Claude alone.
            body["messages"] = [
                {k: v for k, v in m.items() if k != "thinking_blocks"} for m in body["messages"]
            ]
        return body

    # The Wire: the native branch, or the translated one.

    def answer(self, plan, provider, model, context) -> dict:
        if provider.capabilities.responses:
            return super().answer(plan, provider, model, context)
        body = self._chat_body(plan, provider, model)
        response = translated.answer(self, provider, body, context)
        self.keep(response)
        return response

    def open_stream(self, plan, provider, model, context):
        if provider.capabilities.responses:
            return super().open_stream(plan, provider, model, context)
        body = self._chat_body(plan, provider, model)
        reply, self.events = translated.open_stream(self, provider, body, context)
        return reply

    def stream_error_event(self, status: int, message: str) -> bytes:
        if self.events is not None:
            failed = self.events.failed(errors.stream_code(status), message)
            return named_sse(failed) + b"\n\n"
        return super().stream_error_event(status, message)


class ResponsesProtocol(ClientProtocol):
    """The OpenAI Responses API, for Codex CLI and the openai-agents SDK."""

    def parse(self, raw: bytes, request, key):
        return parse_responses_body(raw, key.pk, optional_tools(request, api_config()))

    def wire(self, request, planned, key, config):
        return ResponsesWire(planned, key.pk, config.responses.store_ttl_hours)

    def render_error(self, error):
        return errors.router_error_response(error)


RESPONSES = ResponsesProtocol()
