"""Relaying the answer: plain, or an event stream passed on as it arrives; the row at the end.

A stream can be retried only while nothing has reached the client, so the
first event is read (and parsed) before the response starts. After that,
events are relayed as they arrive, never buffered whole; anything that is
not an SSE event ends the stream with a clean error event in the client's
shape, and the row records the failure. What the client's protocol changes
(how the upstream is called, how the answer and its stream read, the error
shape) is its ``Wire`` (routing.protocols.base); every wire is relayed alike.
"""

import logging

from django.http import HttpResponse, StreamingHttpResponse

from pinch import CHARS_PER_TOKEN
from routing.dispatch.attempts import NOTHING_RAN, UpstreamFailed, call_with_fallback
from routing.dispatch.failures import failure_for, tried
from routing.dispatch.outcome import Outcome
from routing.errors import ProviderError
from routing.providers import monotonic_ms
from routing.recording.decisions import finish_decision

log = logging.getLogger(__name__)

# Rows of streams the client walked away from (nginx's code for it).
CLIENT_CLOSED_STATUS = 499


def _fail(decision, outcome: Outcome, failure: UpstreamFailed, headers: dict, wire):
    response = wire.failure_response(failure_for(failure.error, outcome.attempts))
    outcome.status = response.status_code
    outcome.error = tried(outcome.attempts)
    outcome.nothing_ran = all(a["result"] in NOTHING_RAN for a in outcome.attempts)
    if outcome.nothing_ran:
        headers = {**headers, "X-Router-Model": "none"}
    log.warning(
        "upstream_failed decision=%s status=%s tried: %s",
        decision.id,
        response.status_code,
        outcome.error,
    )
    finish_decision(decision, outcome)
    _set_headers(response, headers, outcome.model)
    return response


def complete(plan, decision, headers: dict, wire):
    """Non-streamed answer."""
    outcome = Outcome()
    try:
        model, answer, started = call_with_fallback(
            plan,
            outcome,
            lambda provider, model, context: wire.answer(plan, provider, model, context),
        )
    except UpstreamFailed as failure:
        return _fail(decision, outcome, failure, headers, wire)
    outcome.latency_ms = round(monotonic_ms() - started, 2)
    outcome.status = 200
    outcome.take_usage(answer.usage)
    outcome.answer_tool_calls = answer.tool_calls
    outcome.stored_response = answer.stored_response
    if outcome.prompt_tokens is None:
        _estimate_usage(outcome, plan, answer.answer_chars)
    finish_decision(decision, outcome)
    response = HttpResponse(answer.content, content_type=wire.content_type)
    _set_headers(response, headers, model)
    return response


def stream(plan, decision, headers: dict, wire):
    """Streamed answer: SSE events relayed as they arrive."""
    outcome = Outcome()

    def open_stream(provider, model, context):
        reply = wire.open_stream(plan, provider, model, context)
        try:
            first = next(reply.events)  # not SSE: a ProviderError before the client saw a byte
        except StopIteration:
            reply.close()
            raise ProviderError(
                "malformed", f"provider {provider.name!r} sent an empty stream"
            ) from None
        except ProviderError:
            reply.close()
            raise
        return reply, first

    try:
        model, (reply, first), started = call_with_fallback(plan, outcome, open_stream)
    except UpstreamFailed as failure:
        return _fail(decision, outcome, failure, headers, wire)
    outcome.status = 200
    outcome.answer_tool_calls = False  # until the watcher sees a call
    relay = _relay(plan, decision, outcome, reply, first, started, wire)
    response = StreamingHttpResponse(relay, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # tell nginx-style proxies not to buffer
    _set_headers(response, headers, model)
    return response


def _relay(plan, decision, outcome: Outcome, reply, first, started, wire):
    watcher = wire.watcher(plan, outcome, reply)
    finished = False

    def finish():
        nonlocal finished
        if finished:
            return
        finished = True
        reply.close()
        outcome.latency_ms = round(monotonic_ms() - started, 2)
        if outcome.prompt_tokens is None:
            _estimate_usage(outcome, plan, watcher.answer_chars)
        elif not watcher.completed:
            # Cut before the final usage (a client gone before message_delta): what was
            # sent, not the placeholder an opening event counts (message_start's 1).
            sent = watcher.answer_chars // CHARS_PER_TOKEN
            outcome.completion_tokens = max(outcome.completion_tokens or 0, sent)
        finish_decision(decision, outcome)

    try:
        event = first
        events = reply.events
        while event is not None:
            send, last = watcher.see(event)
            if last:
                # Clients stop reading at the last event: record the row before they can look.
                finish()
            if send is not None:
                yield send.sse() + b"\n\n"
            event = None if finished else next(events, None)
        if not watcher.completed and not outcome.error:
            raise ProviderError("connect", "the upstream stream ended before it was finished")
    except ProviderError as error:
        yield watcher.error_event(*_stream_failed(outcome, error))
    except GeneratorExit:
        outcome.status = CLIENT_CLOSED_STATUS
        outcome.error = "client disconnected"
        raise
    except Exception as error:
        # A fault of the router's own mid-stream: the client has had its 200, so the
        # stream ends with an error event and the row says what happened, not 200.
        log.exception("stream_relay_failed decision=%s", decision.id)
        outcome.status = 500
        outcome.error = f"router error mid-stream: {type(error).__name__}"
        yield watcher.error_event(500, "The router failed while relaying this stream.")
    finally:
        finish()


def _stream_failed(outcome: Outcome, error: ProviderError) -> tuple[int, str]:
    """Record a stream that failed after it started; the status and message to tell the client."""
    status = 504 if error.kind == "timeout" else 502
    outcome.status = status
    outcome.error = error.message
    log.warning("upstream_stream_failed reason=%s", error.message)
    return status, error.message


def _estimate_usage(outcome: Outcome, plan, answer_chars: int):
    outcome.prompt_tokens = plan.measured_tokens
    outcome.completion_tokens = answer_chars // CHARS_PER_TOKEN
    outcome.usage_estimated = True


def _set_headers(response, headers: dict, model=None):
    for name, value in headers.items():
        response[name] = value
    if model is not None:
        # After a fallback the model that answered is not the one planned.
        response["X-Router-Model"] = model.id
