"""The Messages API served natively: a Claude client, an Anthropic upstream, nothing translated.

The client's own Messages body goes out, with pinch's changes mapped back
onto its ``tool_result`` blocks and every other block as sent
(``native_request``), the client's ``anthropic-beta`` and
``anthropic-version`` forwarded; the answer and its events are relayed as
they come, only ``model`` set back to the name the client asked for. This
module and what it imports hold no reply translator (a layout test keeps it
so): the translated path (``translated``) is the wire's other branch.

Reading an answer (``message_answer``: usage, size, tool calls; the watcher of
a stream) and the error shape are the same on both paths, since both hand
the client Messages: they are here, on ``NativeMessagesWire``, which the
wire extends.
"""

import json

from routing import jsonio
from routing.errors import ProviderError
from routing.forwarding import allowed_body, allowed_headers
from routing.protocols.base import Answer, Event, StreamReply, Wire
from routing.protocols.messages import errors
from routing.protocols.messages.inbound import MessagesSource
from routing.protocols.messages.shapes import MessagesRequest, blocks_of, chat_usage


def native_request(
    source: MessagesSource, original: list, sent: list, model_name: str
) -> MessagesRequest:
    """The client's Messages body for an Anthropic upstream, with pinch's changes applied.

    ``original`` and ``sent``: the chat messages before and after pinch (the
    same objects where pinch changed nothing). Every block is a fresh shallow
    copy with the client's keys in the client's order, so breakpoints placed
    on the result never touch the request kept for a retry.
    """
    body = dict(source.body)
    body["model"] = model_name
    if body.get("system"):
        body["system"] = [dict(block) for block in blocks_of(body["system"])]
    turns = [
        {**turn, "content": [dict(block) for block in blocks_of(turn["content"])]}
        for turn in body["messages"]
    ]
    for index, (t, j) in source.results.items():
        if sent[index] is original[index]:
            continue
        block = turns[t]["content"][j]
        block["content"] = _replaced_content(block.get("content"), sent[index]["content"])
    body["messages"] = turns
    return MessagesRequest(body=body, block_of=list(source.block_of))


def _replaced_content(content, text: str):
    """The result's content with its text replaced by pinch's; images and documents kept."""
    if not isinstance(content, list):
        return text
    kept = [b for b in content if not (isinstance(b, dict) and b.get("type") == "text")]
    return [{"type": "text", "text": text}, *kept]


def upstream_request(plan, model) -> MessagesRequest:
    """The client's request for an Anthropic upstream: pinch's changes on it, as forwarded."""
    request = native_request(
        plan.request.source, plan.request.messages, plan.send_messages, model.send_as
    )
    request.body = allowed_body(request.body, plan.config.forwarding)
    return request


def message_answer(message: dict, model_name: str) -> Answer:
    """A Message for the client, named as it asked, read once (both paths hand one over)."""
    message = {**message, "model": model_name}
    content = message.get("content") or ()
    return Answer(
        jsonio.dumps(message),
        reported_usage(message.get("usage"), message.get("diagnostics")),
        sum(_block_chars(block) for block in content),
        any(_is_tool_use(block) for block in content),
    )


class NativeMessagesWire(Wire):
    """A Messages exchange with an upstream that speaks it; the answer read as Messages."""

    def answer(self, plan, provider, model, context) -> Answer:
        request = upstream_request(plan, model)
        message = provider.messages(request, context, _headers(plan))
        return message_answer(message, plan.request.model)

    def open_stream(self, plan, provider, model, context):
        request = upstream_request(plan, model)
        reply = provider.messages_stream(request, context, _headers(plan))
        events = _native_events(reply.events, provider, plan.request.model)
        return StreamReply(reply.response, events)

    def watcher(self, plan, outcome, reply):
        return MessagesWatcher(outcome)

    def failure_response(self, failure):
        return errors.failure_response(failure)


def _headers(plan) -> dict:
    return allowed_headers(plan.request.source.client_headers, plan.config.forwarding)


def _native_events(events, provider, model_name: str):
    """The upstream's events, ``model`` set to the client's name; a stream cut short raises."""
    for event in events:
        data = event.data
        kind = data.get("type") if data else None
        if kind == "message_start" and isinstance(data.get("message"), dict):
            data["message"]["model"] = model_name
            event.changed()
        yield event
        if kind in ("message_stop", "error"):
            return
    raise ProviderError("connect", f"provider {provider.name!r} stream ended mid-answer")


def reported_usage(usage, diagnostics=None) -> dict | None:
    """Anthropic usage in chat-completions terms, or None when nothing was counted.

    A chat upstream that reports no usage still yields a Message with zeros in
    it (the Messages API has no "unknown"); every real prompt has input tokens,
    so all zeros means the router must estimate.
    """
    if not isinstance(usage, dict) or not any(isinstance(v, int) and v > 0 for v in usage.values()):
        return None
    return chat_usage(usage, diagnostics)


def _is_tool_use(block) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_use"


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
        self._diagnostics = None

    def see(self, sent: Event) -> tuple[Event | None, bool]:
        """(what to send the client; whether the client reads nothing after it)."""
        event = sent.data
        if event is None:
            return sent, False
        kind = event.get("type")
        if kind in ("message_start", "message_delta"):
            where = event.get("message") if kind == "message_start" else event
            usage = where.get("usage") if isinstance(where, dict) else None
            if kind == "message_start" and isinstance(where, dict):
                self._diagnostics = where.get("diagnostics")
            if isinstance(usage, dict):
                self._usage.update({k: v for k, v in usage.items() if v is not None})
                self.outcome.take_usage(reported_usage(self._usage, self._diagnostics))
        elif kind == "content_block_start" and _is_tool_use(event.get("content_block")):
            self.outcome.answer_tool_calls = True
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

    def error_event(self, status: int, message: str) -> bytes:
        return errors.stream_error_event(status, message)
