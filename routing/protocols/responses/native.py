"""The Responses API served natively: a Responses client, a Responses upstream, no translation.

A provider with ``responses_api: true`` (OpenAI) gets the client's own body,
its items as sent except the ``function_call_output`` items pinch rewrote
(``inbound.native_body``), history from a stored response inlined; its
answer and events are relayed as they come, only ``model`` (and ``id``, the
router's own) set back. This module and what it imports hold no reply
translator (a layout test keeps it so): the translated path is the wire's
other branch (``translated``).

Reading an answer (usage, size, tool calls, the watcher of a stream), what
of a finished response to keep for ``previous_response_id`` (handed over on
the Outcome: routing/recording writes it with the decision) and the error shape are the
same on both paths, since both hand the client a ``response``: they are
here, on ``NativeResponsesWire``, which the wire extends.
"""

from routing.errors import ProviderError
from routing.protocols.base import Event, StreamReply, Wire
from routing.protocols.chat import errors as chat_errors
from routing.protocols.responses import errors
from routing.protocols.responses.inbound import input_items, native_body
from routing.protocols.responses.shapes import chat_usage, new_id
from routing.recording import stored

# Events that end a Responses stream.
FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed", "error")


class NativeResponsesWire(Wire):
    """A Responses exchange with an upstream that speaks it; the answer read as a response."""

    def __init__(self, request, api_key_id, store_ttl_hours: float):
        self.source = request.source
        self.model_name = self.source.model  # what the client asked for, and is answered as
        self.api_key_id = api_key_id
        self.store_ttl_hours = store_ttl_hours
        self.response_id = new_id("resp")
        self.last_sequence = -1

    def _native_body(self, plan, model) -> dict:
        return native_body(self.source, plan.request.messages, plan.send_messages, model.send_as)

    def answer(self, plan, provider, model, context) -> dict:
        # The router's own id: an upstream's may be missing, too long, or reused
        # (and another key's row must never be found, or overwritten, by it).
        return {
            **provider.responses(self._native_body(plan, model)),
            "id": self.response_id,
            "model": self.model_name,
        }

    def open_stream(self, plan, provider, model, context):
        reply = provider.responses_stream(self._native_body(plan, model))
        return StreamReply(reply.response, self._native_events(reply.events, provider))

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

    def asks_tools(self, data: dict) -> bool:
        return any(_is_call(item) for item in data.get("output") or ())

    def watcher(self, plan, outcome):
        return ResponsesWatcher(self, outcome)

    def stream_error_event(self, status: int, message: str) -> bytes:
        return errors.error_event(self.last_sequence + 1, status, message)

    def failure_response(self, failure):
        return chat_errors.failure_response(failure)

    def to_keep(self, response: dict) -> dict | None:
        """What to store with the decision, unless the client sent ``store: false``."""
        if not self.source.stores_response:
            return None
        if response.get("status") not in ("completed", "incomplete"):
            return None
        body = self.source.body
        return stored.to_keep(
            self.response_id,
            self.api_key_id,
            input_items(body),
            response,
            body.get("previous_response_id") or "",
            self.store_ttl_hours,
        )


def _is_call(item) -> bool:
    # function_call, custom_tool_call, local_shell_call...: anything the client must run.
    return isinstance(item, dict) and str(item.get("type", "")).endswith("_call")


def _item_chars(item) -> int:
    if not isinstance(item, dict):
        return 0
    if item.get("type") == "message":
        return sum(len(part.get("text") or "") for part in item.get("content") or ())
    return len(item.get("arguments") or item.get("input") or "")


class ResponsesWatcher:
    """Reads a Responses event stream as it is relayed: usage, errors, answer size, the end."""

    def __init__(self, wire: NativeResponsesWire, outcome):
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
            self.outcome.answer_tool_calls = self.wire.asks_tools(response)
            if kind in ("error", "response.failed"):
                error = event if kind == "error" else response.get("error") or {}
                error = error if isinstance(error, dict) else {}
                self.outcome.upstream_error(f"{error.get('code')}: {error.get('message')}")
            else:
                self.outcome.stored_response = self.wire.to_keep(response)
            return sent, True
        return sent, False
