"""The Messages API's side of the upstream call: native to Claude models, translated to the rest.

A /v1/messages request was planned like any other (routing.pipeline); here
the dispatcher's ``Wire`` is told how to reach the model it chose:

* an Anthropic provider gets the client's own Messages body, with pinch's
  changes mapped back onto its ``tool_result`` blocks and every other block
  as sent (``inbound.native_request``), the client's ``anthropic-beta`` and
  ``anthropic-version`` forwarded; its answer and events are relayed as they
  come, only ``model`` set back to the name the client asked for;
* any other provider gets the chat-completions translation of it, and its
  answer and chunks are translated into a Message and Messages events
  (``protocols.messages.reply``).

Failures leave in Anthropic's error shape, as an HTTP status before the
stream has started and as an ``error`` event after.
"""

import json
import logging

from routing.errors import ProviderError
from routing.forwarding import allowed_body, allowed_headers
from routing.protocols.base import ClientProtocol, Event, StreamReply, Wire
from routing.protocols.chunks import translate
from routing.protocols.messages import errors
from routing.protocols.messages.errors import anthropic_error_body
from routing.protocols.messages.inbound import native_request
from routing.protocols.messages.reply import MessageEvents, to_message
from routing.protocols.messages.request import parse_messages_body
from routing.protocols.messages.shapes import chat_usage

log = logging.getLogger(__name__)

# Headers of the client's request that go on to an Anthropic upstream.
FORWARDED_HEADERS = {
    "anthropic-beta": "HTTP_ANTHROPIC_BETA",
    "anthropic-version": "HTTP_ANTHROPIC_VERSION",
}


def forwarded_headers(request) -> dict:
    """The client's Anthropic headers from a Django request's META."""
    return {
        name: request.META[key] for name, key in FORWARDED_HEADERS.items() if key in request.META
    }


def untranslatable_error(plan, provider, model) -> ProviderError:
    what = "; ".join(plan.request.source.untranslatable)
    message = (
        f"The model {model.id!r} (provider {provider.name!r}) speaks chat completions, "
        f"which has no place for: {what}. Use a Claude model for this request."
    )
    return ProviderError("status", message, 400, anthropic_error_body(400, message))


class MessagesWire(Wire):
    def __init__(self, client_headers: dict, model_name: str):
        self.client_headers = client_headers
        self.model_name = model_name  # what the client asked for, and is answered as

    def _native_request(self, plan, model):
        request = native_request(
            plan.request.source, plan.request.messages, plan.send_messages, model.send_as
        )
        request.body = allowed_body(request.body, plan.config.forwarding)
        return request

    def _headers(self, plan) -> dict:
        return allowed_headers(self.client_headers, plan.config.forwarding)

    def _chat_body(self, plan, provider, model) -> dict:
        if plan.request.source.untranslatable:
            raise untranslatable_error(plan, provider, model)
        return plan.upstream_body(model)

    def answer(self, plan, provider, model, context) -> dict:
        if provider.capabilities.messages:
            message = provider.messages(
                self._native_request(plan, model), context, self._headers(plan)
            )
            return {**message, "model": self.model_name}
        completion = provider.chat(self._chat_body(plan, provider, model), context=context)
        return to_message(completion, self.model_name)

    def open_stream(self, plan, provider, model, context):
        if provider.capabilities.messages:
            reply = provider.messages_stream(
                self._native_request(plan, model), context, self._headers(plan)
            )
            return StreamReply(reply.response, self._native_events(reply.events, provider))
        reply = provider.chat_stream(self._chat_body(plan, provider, model), context=context)
        # Anthropic sends a ping after message_start; clients expect to ignore some.
        events = translate(
            reply.events,
            MessageEvents(self.model_name),
            provider.name,
            ({"type": "ping"},),
        )
        return StreamReply(reply.response, events)

    def _native_events(self, events, provider):
        """The upstream's events, ``model`` set to the client's name; a stream cut short raises."""
        for event in events:
            data = event.data
            kind = data.get("type") if data else None
            if kind == "message_start" and isinstance(data.get("message"), dict):
                data["message"]["model"] = self.model_name
                event.changed()
            yield event
            if kind in ("message_stop", "error"):
                return
        raise ProviderError("connect", f"provider {provider.name!r} stream ended mid-answer")

    def usage(self, data: dict):
        usage = data.get("usage")
        return reported_usage(usage)

    def answer_chars(self, data: dict) -> int:
        return sum(_block_chars(block) for block in data.get("content") or ())

    def watcher(self, plan, outcome):
        return MessagesWatcher(outcome)

    def stream_error_event(self, status: int, message: str) -> bytes:
        return errors.stream_error_event(status, message)

    def failure_response(self, failure):
        return errors.failure_response(failure)


def reported_usage(usage) -> dict | None:
    """Anthropic usage in chat-completions terms, or None when nothing was counted.

    A chat upstream that reports no usage still yields a Message with zeros in
    it (the Messages API has no "unknown"); every real prompt has input tokens,
    so all zeros means the router must estimate.
    """
    if not isinstance(usage, dict) or not any(isinstance(v, int) and v > 0 for v in usage.values()):
        return None
    return chat_usage(usage)


def _block_chars(block) -> int:
    if not isinstance(block, dict):
        return 0
    if block.get("type") == "tool_use":
        return len(json.dumps(block.get("input") or {}))
    text = block.get("text") or block.get("thinking")
    return len(text) if isinstance(text, str) else 0


class MessagesWatcher:
    """Reads a Messages event stream as it is relayed: usage, errors, answer size, the end."""

    def __init__(self, outcome):
        self.outcome = outcome
        self.answer_chars = 0
        self.completed = False  # message_stop: the upstream said it was done
        self._usage: dict = {}

    def see(self, sent: Event) -> tuple[Event | None, bool]:
        """(what to send the client; whether the client reads nothing after it)."""
        event = sent.data
        if event is None:
            return sent, False
        kind = event.get("type")
        if kind in ("message_start", "message_delta"):
            where = event.get("message") if kind == "message_start" else event
            usage = where.get("usage") if isinstance(where, dict) else None
            if isinstance(usage, dict):
                self._usage.update({k: v for k, v in usage.items() if v is not None})
                self.outcome.take_usage(reported_usage(self._usage))
        elif kind == "content_block_delta":
            delta = event.get("delta") if isinstance(event.get("delta"), dict) else {}
            piece = delta.get("text") or delta.get("partial_json") or delta.get("thinking") or ""
            self.answer_chars += len(piece) if isinstance(piece, str) else 0
        elif kind == "message_stop":
            self.completed = True
        elif kind == "error":
            error = event.get("error") if isinstance(event.get("error"), dict) else {}
            message = f"{error.get('type')}: {error.get('message')}"
            self.outcome.upstream_error(message)
        return sent, kind in ("message_stop", "error")


# Generation settings the count_tokens endpoint refuses.
_NOT_COUNTED = ("max_tokens", "stream", "temperature", "top_p", "top_k", "stop_sequences")


def count_tokens(plan, provider, client_headers: dict) -> dict:
    """``{"input_tokens": n}`` for the (pruned) prompt the plan would send.

    A Claude model asks its upstream, which counts with the real tokenizer;
    any other model, or an upstream that fails, gets the router's estimate
    (the measured tokens routing used).
    """
    model = plan.model
    if provider.capabilities.messages:
        request = native_request(
            plan.request.source, plan.request.messages, plan.send_messages, model.send_as
        )
        body = allowed_body(request.body, plan.config.forwarding)
        body = {k: v for k, v in body.items() if k not in _NOT_COUNTED}
        try:
            answer = provider.count_tokens(
                body, allowed_headers(client_headers, plan.config.forwarding)
            )
            if isinstance(answer.get("input_tokens"), int):
                return {"input_tokens": answer["input_tokens"]}
        except ProviderError as error:
            log.warning("count_tokens_estimated model=%s reason=%s", model.id, error.message)
    return {"input_tokens": plan.measured_tokens}


class MessagesProtocol(ClientProtocol):
    """The Anthropic Messages API, for Claude Code (ANTHROPIC_BASE_URL at the router)."""

    def parse(self, raw: bytes, request, key):
        return parse_messages_body(raw)

    def wire(self, request, planned, key, config):
        return MessagesWire(forwarded_headers(request), planned.model)

    def render_error(self, error):
        return errors.router_error_response(error)


MESSAGES = MessagesProtocol()
