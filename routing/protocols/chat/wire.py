"""Chat completions as the dispatcher's wire, and as a client protocol of the endpoint view.

Every provider takes a chat-completions body (the Anthropic provider
translates it), so the wire sends the planned body and relays the answer and
its chunks as they came; only a usage chunk the router asked for on the
caller's behalf is held back.
"""

from routing.protocols.base import Answer, ClientProtocol, Event, Wire
from routing.protocols.chat import errors, reply
from routing.protocols.chat.request import parse_body


class ChatWatcher:
    """Reads a chat-completions stream as it is relayed: usage, errors, answer size, the end."""

    def __init__(self, plan, outcome):
        self.caller_wants_usage = plan.request.include_usage
        self.outcome = outcome
        self.answer_chars = 0
        self.completed = False  # [DONE], or a finish_reason: the upstream said it was done

    def see(self, event: Event) -> tuple[Event | None, bool]:
        """(what to send the client, or None; whether the client reads nothing after it)."""
        if event.done:
            self.completed = True
            return event, True
        chunk = event.data
        if chunk is None:
            return event, False
        send = event
        if chunk.get("usage"):
            self.outcome.take_usage(chunk["usage"])
            # We asked for usage on the caller's behalf: hide the extra chunk.
            if not self.caller_wants_usage and not chunk.get("choices"):
                send = None
        error = chunk.get("error")
        if isinstance(error, dict):
            self.outcome.upstream_error(error.get("message") or error.get("type") or "")
        choices = chunk.get("choices")
        self.completed = self.completed or reply.finished(choices)
        self.answer_chars += reply.answer_chars(choices)
        self.outcome.answer_tool_calls = self.outcome.answer_tool_calls or reply.asks_tools(
            choices, "delta"
        )
        return send, False

    def error_event(self, status: int, message: str) -> bytes:
        return errors.stream_error_event(status, message)


def upstream_body(plan, model) -> dict:
    """The plan's chat body with ``model``'s upstream name: a copy, the plan's stays as it is."""
    return {**plan.upstream_body, "model": model.send_as}


class ChatWire(Wire):
    """Chat completions to the client, from whatever protocol the provider speaks."""

    def answer(self, plan, provider, model, context) -> Answer:
        return reply.read_answer(provider.chat(upstream_body(plan, model), context=context))

    def open_stream(self, plan, provider, model, context):
        return provider.chat_stream(upstream_body(plan, model), context=context)

    def watcher(self, plan, outcome, reply):
        return ChatWatcher(plan, outcome)

    def failure_response(self, failure):
        return errors.failure_response(failure)


CHAT = ClientProtocol(parse_body, ChatWire(), errors.router_error_response)
