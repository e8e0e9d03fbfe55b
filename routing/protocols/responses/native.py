"""The Responses API served natively: a Responses client, a Responses upstream, no translation.

A provider with ``responses_api: true`` (OpenAI) gets the client's own body,
its items as sent except the ``function_call_output`` items pinch rewrote
(``native_body``), history from a stored response inlined; its
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

from routing import jsonio
from routing.errors import ProviderError
from routing.protocols.base import Answer, Event, StreamReply, Wire, named_sse
from routing.protocols.chat import errors as chat_errors
from routing.protocols.responses import errors
from routing.protocols.responses.shapes import TEXT_PARTS, chat_usage, input_items

# Events that end a Responses stream.
FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed", "error")


def native_body(source, original: list, sent: list, model_name: str) -> dict:
    """The client's body for a Responses upstream: its items, with pinch's changes applied.

    ``original`` and ``sent``: the chat messages before and after pinch (the
    same objects where pinch changed nothing). History from a stored
    response is sent as items, so the upstream needs no state of its own.
    """
    body = {k: v for k, v in source.body.items() if k != "previous_response_id"}
    body["model"] = model_name
    items = list(source.items)
    for index, i in source.results.items():
        if sent[index] is original[index]:
            continue
        items[i] = {**items[i], "output": _replaced_output(items[i].get("output"), sent[index])}
    body["input"] = items
    return body


def _replaced_output(output, message: dict):
    """The output with its text replaced by pinch's; images kept."""
    if not isinstance(output, list):
        return message["content"]
    kept = [p for p in output if not (isinstance(p, dict) and p.get("type") in TEXT_PARTS)]
    return [{"type": "input_text", "text": message["content"]}, *kept]


class NativeResponsesWire(Wire):
    """A Responses exchange with an upstream that speaks it; the answer read as a response."""

    def answer(self, plan, provider, model, context) -> Answer:
        source = plan.request.source
        body = native_body(source, plan.request.messages, plan.send_messages, model.send_as)
        return response_answer(provider.responses(body), plan)

    def open_stream(self, plan, provider, model, context):
        source = plan.request.source
        body = native_body(source, plan.request.messages, plan.send_messages, model.send_as)
        reply = provider.responses_stream(body)
        return StreamReply(reply.response, _native_events(reply.events, provider, source))

    def watcher(self, plan, outcome, reply):
        return ResponsesWatcher(plan, outcome, reply.translator)

    def failure_response(self, failure):
        return chat_errors.failure_response(failure, "responses")


def response_answer(response: dict, plan) -> Answer:
    """A finished response for the client, kept for ``previous_response_id``, read once.

    The router's own id: an upstream's may be missing, too long, or reused (and
    another key's row must never be found, or overwritten, by it).
    """
    source = plan.request.source
    response = {**response, "id": source.response_id, "model": source.model}
    output = response.get("output") or ()
    return Answer(
        jsonio.dumps(response),
        chat_usage(response.get("usage")),
        sum(_item_chars(item) for item in output),
        asks_tools(response),
        stored_response=to_keep(plan, response),
    )


def asks_tools(response: dict) -> bool:
    return any(_is_call(item) for item in response.get("output") or ())


def _native_events(events, provider, source):
    """The upstream's events, ``model`` set to the client's name; a stream cut short raises."""
    for event in events:
        data = event.data
        kind = data.get("type") if data else None
        if data and isinstance(data.get("response"), dict):
            data["response"]["model"] = source.model
            data["response"]["id"] = source.response_id  # the router's own, as above
            event.changed()
        yield event
        if kind in FINAL_EVENTS:
            return
    raise ProviderError("connect", f"provider {provider.name!r} stream ended mid-answer")


def to_keep(plan, response: dict) -> dict | None:
    """What to store with the decision (routing.recording.stored), unless the client sent
    ``store: false``."""
    source = plan.request.source
    if not source.stores_response or response.get("status") not in ("completed", "incomplete"):
        return None
    body = source.body
    # Plain JSON (it may be spooled); routing.recording.stored writes it with the row.
    return {
        "response_id": source.response_id,
        "api_key_id": source.api_key_id,
        "input_items": input_items(body),
        "response": response,
        "previous_response_id": body.get("previous_response_id") or "",
        "ttl_hours": plan.config.responses.store_ttl_hours,
    }


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
    """Reads a Responses event stream as it is relayed: usage, errors, answer size, the end.

    ``translator``: the events' translator on a translated stream, which ends
    a broken one in its own numbering (``ResponseEvents.failed``).
    """

    def __init__(self, plan, outcome, translator=None):
        self.plan = plan
        self.outcome = outcome
        self.translator = translator
        self.answer_chars = 0
        self.completed = False  # a final event: the upstream said it was done
        self.last_sequence = -1

    def see(self, sent: Event) -> tuple[Event | None, bool]:
        event = sent.data
        if event is None:
            return sent, False
        kind = event.get("type")
        if isinstance(event.get("sequence_number"), int):
            self.last_sequence = event["sequence_number"]
        delta = event.get("delta")
        if kind in ("response.output_text.delta", "response.function_call_arguments.delta"):
            self.answer_chars += len(delta) if isinstance(delta, str) else 0
        if kind in FINAL_EVENTS:
            self.completed = True
            response = event.get("response") if isinstance(event.get("response"), dict) else {}
            self.outcome.take_usage(chat_usage(response.get("usage")))
            self.outcome.answer_tool_calls = asks_tools(response)
            if kind in ("error", "response.failed"):
                error = event if kind == "error" else response.get("error") or {}
                error = error if isinstance(error, dict) else {}
                self.outcome.upstream_error(f"{error.get('code')}: {error.get('message')}")
            else:
                self.outcome.stored_response = to_keep(self.plan, response)
            return sent, True
        return sent, False

    def error_event(self, status: int, message: str) -> bytes:
        if self.translator is not None:
            failed = self.translator.failed(errors.stream_code(status), message)
            return named_sse(failed) + b"\n\n"
        return errors.error_event(self.last_sequence + 1, status, message)
