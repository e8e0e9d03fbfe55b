"""The Responses API's side of the upstream call: native where it is spoken, translated elsewhere.

A /v1/responses request was planned like any other (routing.pipeline); here
the dispatcher's ``Wire`` is told how to reach the model it chose:

* a provider with ``responses_api: true`` (OpenAI) gets the client's own
  body, its items as sent except the ``function_call_output`` items pinch
  rewrote (``inbound.native_body``), history from a stored response inlined;
  its answer and events are relayed as they come, only ``model`` set back to
  the name the client asked for;
* any other provider (OpenAI-compatible chat, or Claude through the Anthropic
  provider's translation) gets the chat-completions translation, and its
  answer and chunks become a ``response`` and the Responses event stream
  (``protocols.responses.reply``). Built-in tools it cannot run are left
  out (``responses.hosted_tools: omit``, the default; named in the
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
from routing.errors import ProviderError, RouterError
from routing.protocols.base import ClientProtocol, Event, StreamReply, Wire, named_sse
from routing.protocols.chat import errors as chat_errors
from routing.protocols.chunks import translate
from routing.protocols.responses import errors
from routing.protocols.responses.inbound import input_items, native_body
from routing.protocols.responses.reply import ResponseEvents, chat_usage, new_id, to_response
from routing.protocols.responses.request import parse_responses_body
from routing.protocols.responses.store import keep_response

log = logging.getLogger(__name__)

OPTIONAL_TOOLS_HEADER = "HTTP_X_ROUTER_OPTIONAL_TOOLS"
# Events that end a Responses stream.
FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed", "error")


def optional_tools(request, config) -> frozenset:
    """Built-in tool types the router may leave out (``*``: all of them).

    All, under ``responses.hosted_tools: omit``; else those the client lists.
    """
    if config.responses.hosted_tools == "omit":
        return frozenset({"*"})
    value = request.META.get(OPTIONAL_TOOLS_HEADER, "")
    return frozenset(name.strip() for name in value.split(",") if name.strip())


class ResponsesWire(Wire):
    def __init__(self, request, api_key_id, store_ttl_hours: float):
        self.source = request.source
        self.model_name = self.source.model  # what the client asked for, and is answered as
        self.api_key_id = api_key_id
        self.store_ttl_hours = store_ttl_hours
        self.response_id = new_id("resp")
        self.events = None  # the translator of a translated stream
        self.last_sequence = -1

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

    def _native_body(self, plan, model) -> dict:
        return native_body(self.source, plan.request.messages, plan.send_messages, model.send_as)

    # The Wire.

    def answer(self, plan, provider, model, context) -> dict:
        if provider.capabilities.responses:
            # The router's own id: an upstream's may be missing, too long, or reused
            # (and another key's row must never be found, or overwritten, by it).
            response = {
                **provider.responses(self._native_body(plan, model)),
                "id": self.response_id,
                "model": self.model_name,
            }
        else:
            completion = provider.chat(self._chat_body(plan, provider, model), context=context)
            response = to_response(completion, self.source, self.response_id, self.model_name)
        self.keep(response)
        return response

    def open_stream(self, plan, provider, model, context):
        if provider.capabilities.responses:
            reply = provider.responses_stream(self._native_body(plan, model))
            return StreamReply(reply.response, self._native_events(reply.events, provider))
        reply = provider.chat_stream(self._chat_body(plan, provider, model), context=context)
        self.events = ResponseEvents(self.source, self.response_id, self.model_name)
        events = translate(reply.events, self.events, provider.name)
        return StreamReply(reply.response, events)

    def _native_events(self, events, provider):
        """The upstream's events, ``model`` set to the client's name; a stream cut short raises."""
        for event in events:
            data = event.data
            kind = data.get("type") if data else None
            if data and isinstance(data.get("response"), dict):
                data["response"]["model"] = self.model_name
                data["response"]["id"] = self.response_id  # the router's own, as above
                event.changed()
            yield event
            if kind in FINAL_EVENTS:
                return
        raise ProviderError("connect", f"provider {provider.name!r} stream ended mid-answer")

    def usage(self, data: dict):
        return chat_usage(data.get("usage"))

    def answer_chars(self, data: dict) -> int:
        return sum(_item_chars(item) for item in data.get("output") or ())

    def watcher(self, plan, outcome):
        return ResponsesWatcher(self, outcome)

    def stream_error_event(self, status: int, message: str) -> bytes:
        if self.events is not None:
            failed = self.events.failed(errors.stream_code(status), message)
            return named_sse(failed) + b"\n\n"
        return errors.error_event(self.last_sequence + 1, status, message)

    def failure_response(self, failure):
        return chat_errors.failure_response(failure)

    def keep(self, response: dict) -> None:
        """Store a finished response unless the client said ``store: false``."""
        if self.source.body.get("store") is False:
            return
        if response.get("status") not in ("completed", "incomplete"):
            return
        body = self.source.body
        previous = body.get("previous_response_id") or ""
        keep_response(self.api_key_id, input_items(body), response, self.store_ttl_hours, previous)


def _item_chars(item) -> int:
    if not isinstance(item, dict):
        return 0
    if item.get("type") == "message":
        return sum(len(part.get("text") or "") for part in item.get("content") or ())
    return len(item.get("arguments") or item.get("input") or "")


class ResponsesWatcher:
    """Reads a Responses event stream as it is relayed: usage, errors, answer size, the end."""

    def __init__(self, wire: ResponsesWire, outcome):
        self.wire = wire
        self.outcome = outcome
        self.answer_chars = 0
        self.completed = False  # a final event: the upstream said it was done

    def see(self, sent: Event) -> tuple[Event | None, bool]:
        event = sent.data
        if event is None:
            return sent, False
        kind = event.get("type")
        if isinstance(event.get("sequence_number"), int):
            self.wire.last_sequence = event["sequence_number"]
        delta = event.get("delta")
        if kind in ("response.output_text.delta", "response.function_call_arguments.delta"):
            self.answer_chars += len(delta) if isinstance(delta, str) else 0
        if kind in FINAL_EVENTS:
            self.completed = True
            response = event.get("response") if isinstance(event.get("response"), dict) else {}
            self.outcome.take_usage(chat_usage(response.get("usage")))
            if kind in ("error", "response.failed"):
                error = event if kind == "error" else response.get("error") or {}
                error = error if isinstance(error, dict) else {}
                self.outcome.upstream_error(f"{error.get('code')}: {error.get('message')}")
            else:
                self.wire.keep(response)
            return sent, True
        return sent, False


class ResponsesProtocol(ClientProtocol):
    """The OpenAI Responses API, for Codex CLI and the openai-agents SDK."""

    def parse(self, raw: bytes, request, key):
        return parse_responses_body(raw, key.pk, optional_tools(request, api_config()))

    def wire(self, request, planned, key, config):
        return ResponsesWire(planned, key.pk, config.responses.store_ttl_hours)

    def render_error(self, error):
        return chat_errors.router_error_response(error)


RESPONSES = ResponsesProtocol()
