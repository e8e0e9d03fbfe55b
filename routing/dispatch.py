"""The upstream call: retries, fallback, relaying the answer, recording the outcome.

On a connect error, a timeout, or a 429/5xx, the same model is tried once
more after a short jittered pause; an upstream that says when to come back
(``retry-after``) is waited for instead when that is soon, and skipped for
the next candidate when it is not. On the routed path the next candidate
follows (same tier by price, then the tiers above). A stream can be retried
only while nothing has reached the client, so the first event is read before
the response starts. After that, events are relayed as they arrive, never
buffered whole; anything that is not an SSE event ends the stream with a
clean error event, and the row records the failure.

What the client's protocol changes (how the upstream is called, how the
answer, its usage and its stream read, the error shape) is a ``Wire``: the
chat-completions one here, the Messages API's in routing.messages_wire.
Retries, fallback and recording are the same for every wire.
"""

import logging
import random
import time
from dataclasses import dataclass, field

from django.http import HttpResponse, StreamingHttpResponse

from pinch import CHARS_PER_TOKEN
from routing import jsonio
from routing.decisions import finish_decision
from routing.errors import PROVIDER_KEY_STATUSES, error_body, error_response
from routing.pricing import billed_prompt_cost_usd
from routing.providers import ProviderError, monotonic_ms, provider_for

log = logging.getLogger(__name__)

TRIES_PER_MODEL = 2  # the first try and one retry on the same model
# A retry-after up to this is waited out before the retry on the same model;
# a longer one would hold the client: the next candidate is tried instead.
MAX_RETRY_AFTER_SECONDS = 5.0
# Without a retry-after, the pause before a retry on the same model: full
# jitter up to BACKOFF_BASE_SECONDS * 2**retry, so retries of many requests
# failing together spread out instead of reaching the upstream in one burst.
BACKOFF_BASE_SECONDS = 0.25
# Rows of streams the client walked away from (nginx's code for it).
CLIENT_CLOSED_STATUS = 499
# Failures where no model ran: the connection failed, or the provider has no key.
# Nothing was billed, so the row and /metrics charge no model with them.
NOTHING_RAN = ("connect", "unconfigured")
DONE_EVENT = b"data: [DONE]"


@dataclass
class Outcome:
    status: int = 0
    error: str = ""
    attempts: list = field(default_factory=list)
    latency_ms: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    usage_estimated: bool = False
    model: object = None
    nothing_ran: bool = False  # every try failed before any model ran (NOTHING_RAN)
    cost_usd: float | None = None
    # Set with the model that answered: the plan's estimate of the unpruned
    # request's (cached, written) split (None when pinch sent it whole: then
    # it cost what it cost).
    unpruned_split: tuple | None = None

    def unpruned_cost_usd(self, billed: float | None) -> float | None:
        """The estimated prompt cost of the same request without pinch (None unbilled).

        Priced like the billed cost (routing.pricing): the cached part read, the
        rest written when the model has a cache block (Anthropic), else at the
        prompt price (a provider that caches by itself charges no write premium).
        """
        if billed is None or self.model is None:
            return None
        if self.unpruned_split is None:
            return billed
        cached, rest = self.unpruned_split
        written = rest if self.model.cache is not None else 0
        return billed_prompt_cost_usd(self.model, cached + rest, cached, written)

    def take_usage(self, usage):
        if not isinstance(usage, dict):
            return
        self.prompt_tokens = usage.get("prompt_tokens")
        self.completion_tokens = usage.get("completion_tokens")
        details = usage.get("prompt_tokens_details")
        details = details if isinstance(details, dict) else {}
        self.cached_tokens = details.get("cached_tokens")
        # Reads and writes of the provider's prompt cache, both inside prompt_tokens
        # (OpenAI reports writes as cache_write_tokens; the Anthropic provider too).
        self.cache_read_tokens = details.get("cached_tokens")
        self.cache_write_tokens = details.get("cache_write_tokens")


class UpstreamFailed(Exception):
    def __init__(self, error: ProviderError):
        super().__init__(error.message)
        self.error = error


def _call_with_fallback(plan, outcome: Outcome, send):
    """Run ``send(provider, model, context)`` down the chain; return (model, result, start_ms).

    A retryable failure is tried once more on the same model (after waiting
    out a short retry-after), then the next candidate; a long retry-after or
    an unset key variable skips to the next candidate at once; any other
    failure (a 400 from the upstream, a malformed answer) ends the chain.
    """
    last_error = None
    for model in plan.candidates:
        provider = provider_for(model.provider, plan.config.providers[model.provider])
        context = plan.call_context(model)
        for attempt in range(TRIES_PER_MODEL):
            started = monotonic_ms()
            try:
                result = send(provider, model, context)
            except ProviderError as error:
                outcome.attempts.append(
                    {
                        "model": model.id,
                        "result": error.kind,
                        "status": error.status,
                        "ms": round(monotonic_ms() - started, 1),
                        "reason": error.message[:200],
                    }
                )
                log.debug("upstream_attempt_failed model=%s reason=%s", model.id, error.message)
                last_error = error
                if error.kind not in NOTHING_RAN:
                    # The answer and the row name the model whose failure is relayed.
                    outcome.model = model
                    outcome.cost_usd = plan.cost_on(model)
                if not error.next_model_may_help:
                    raise UpstreamFailed(error) from None
                if not error.retryable:
                    break
                if attempt + 1 < TRIES_PER_MODEL and not _wait_to_retry(error, attempt + 1):
                    break
                continue
            outcome.attempts.append(
                {
                    "model": model.id,
                    "result": "ok",
                    "status": 200,
                    "ms": round(monotonic_ms() - started, 1),
                }
            )
            if len(outcome.attempts) > 1:
                log.info("upstream_recovered model=%s after: %s", model.id, tried(outcome.attempts))
            outcome.model = model
            outcome.cost_usd = plan.cost_on(model)
            outcome.unpruned_split = plan.unpruned_split
            return model, result, started
    raise UpstreamFailed(last_error)


def tried(attempts: list) -> str:
    """The failed attempts in a sentence: each model once, with its reason and its tries."""
    groups = []  # [model, reason, tries]
    for attempt in attempts:
        if attempt["result"] == "ok":
            continue
        reason = attempt.get("reason") or attempt["result"]
        if groups and groups[-1][:2] == [attempt["model"], reason]:
            groups[-1][2] += 1
        else:
            groups.append([attempt["model"], reason, 1])
    return "; ".join(
        f"{model}: {reason}" + (f" ({tries} tries)" if tries > 1 else "")
        for model, reason, tries in groups
    )


def retry_pause(error: ProviderError, retry: int) -> float | None:
    """Seconds to wait before retry number ``retry`` (1, 2, ...) on the same model; None: don't."""
    if error.retry_after is not None:
        return error.retry_after if error.retry_after <= MAX_RETRY_AFTER_SECONDS else None
    return random.uniform(0, BACKOFF_BASE_SECONDS * 2 ** (retry - 1))


def _wait_to_retry(error: ProviderError, retry: int) -> bool:
    """Wait before the retry and say True; False when the wait asked for is too long."""
    pause = retry_pause(error, retry)
    if pause is None:
        return False
    time.sleep(pause)
    return True


def failure_response(error: ProviderError, attempts: list = ()):
    """The client's answer when every try failed: relay a status, else 502/504 saying why."""
    if error.kind == "status" and error.status in PROVIDER_KEY_STATUSES:
        return error_response(502, error.message, "provider_key_rejected")
    if error.kind == "status":
        body = error.body
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            response = HttpResponse(
                jsonio.dumps(body), status=error.status, content_type="application/json"
            )
        else:
            response = error_response(error.status, error.message, "upstream_error")
        if error.retry_after is not None:
            # The client may wait as the upstream asked (the SDKs honour it).
            response["Retry-After"] = f"{error.retry_after:g}"
        return response
    message = error.message
    if attempts:
        message = f"No upstream answered. Tried {tried(attempts)}."
    if error.kind == "timeout":
        return error_response(504, message, "upstream_timeout")
    if all(a["result"] in ("ok", "unconfigured") for a in attempts):
        return error_response(502, message, "provider_key_missing")
    return error_response(502, message, "upstream_unavailable")


class ChatWatcher:
    """Reads a chat-completions stream as it is relayed: usage, errors, answer size, the end."""

    def __init__(self, plan, outcome: Outcome):
        self.caller_wants_usage = plan.request.include_usage
        self.outcome = outcome
        self.answer_chars = 0
        self.completed = False  # [DONE], or a finish_reason: the upstream said it was done

    def see(self, event: bytes) -> tuple[bytes | None, bool]:
        """(what to send the client, or None; whether the client reads nothing after it)."""
        if event == DONE_EVENT:
            self.completed = True
            return event, True
        chunk = parse_event(event)
        if chunk is None:
            return event, False
        send = event
        if chunk.get("usage"):
            self.outcome.take_usage(chunk["usage"])
            # We asked for usage on the caller's behalf: hide the extra chunk.
            if not self.caller_wants_usage and not chunk.get("choices"):
                send = None
        if isinstance(chunk.get("error"), dict):
            upstream_error_event(self.outcome, chunk["error"])
        self.completed = self.completed or _finished(chunk.get("choices"))
        self.answer_chars += _answer_chars(chunk.get("choices"))
        return send, False


class Wire:
    """Chat completions to the client, from whatever protocol the provider speaks."""

    content_type = "application/json"

    def check(self, plan) -> None:
        """Raise RouterError for a request the planned model cannot be sent, before any row."""

    def answer(self, plan, provider, model, context) -> dict:
        return provider.chat(plan.upstream_body(model), context=context)

    def open_stream(self, plan, provider, model, context):
        return provider.chat_stream(plan.upstream_body(model), context=context)

    def usage(self, data: dict):
        """The answer's usage in chat-completions terms (what Outcome records)."""
        return data.get("usage")

    def answer_chars(self, data: dict) -> int:
        return _answer_chars(data.get("choices"))

    def render(self, data: dict) -> bytes:
        return jsonio.dumps(data)

    def watcher(self, plan, outcome: Outcome):
        return ChatWatcher(plan, outcome)

    def stream_error_event(self, status: int, message: str) -> bytes:
        body = error_body(status, message, "upstream_stream_broken")
        return b"data: " + jsonio.dumps(body) + b"\n\n"

    def failure_response(self, error: ProviderError, attempts: list):
        return failure_response(error, attempts)


CHAT = Wire()


def _fail(decision, outcome: Outcome, failure: UpstreamFailed, headers: dict, wire: Wire):
    response = wire.failure_response(failure.error, outcome.attempts)
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


def complete(plan, decision, headers: dict, wire: Wire = CHAT):
    """Non-streamed answer."""
    outcome = Outcome()
    try:
        model, data, started = _call_with_fallback(
            plan,
            outcome,
            lambda provider, model, context: wire.answer(plan, provider, model, context),
        )
    except UpstreamFailed as failure:
        return _fail(decision, outcome, failure, headers, wire)
    outcome.latency_ms = round(monotonic_ms() - started, 2)
    outcome.status = 200
    outcome.take_usage(wire.usage(data))
    if outcome.prompt_tokens is None:
        _estimate_usage(outcome, plan, wire.answer_chars(data))
    finish_decision(decision, outcome)
    response = HttpResponse(wire.render(data), content_type=wire.content_type)
    _set_headers(response, headers, model)
    return response


def stream(plan, decision, headers: dict, wire: Wire = CHAT):
    """Streamed answer: SSE events relayed as they arrive."""
    outcome = Outcome()

    def open_stream(provider, model, context):
        reply = wire.open_stream(plan, provider, model, context)
        try:
            first = next(reply.events)
            parse_event(first)
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
        model, (reply, first), started = _call_with_fallback(plan, outcome, open_stream)
    except UpstreamFailed as failure:
        return _fail(decision, outcome, failure, headers, wire)
    outcome.status = 200
    relay = _relay(plan, decision, outcome, reply, first, started, wire)
    response = StreamingHttpResponse(relay, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # tell nginx-style proxies not to buffer
    _set_headers(response, headers, model)
    return response


def _relay(plan, decision, outcome: Outcome, reply, first, started, wire: Wire):
    watcher = wire.watcher(plan, outcome)
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
                yield send + b"\n\n"
            event = None if finished else next(events, None)
        if not watcher.completed and not outcome.error:
            raise ProviderError("connect", "the upstream stream ended before it was finished")
    except ProviderError as error:
        yield wire.stream_error_event(*_stream_failed(outcome, error))
    except GeneratorExit:
        outcome.status = CLIENT_CLOSED_STATUS
        outcome.error = "client disconnected"
        raise
    finally:
        finish()


def _stream_failed(outcome: Outcome, error: ProviderError) -> tuple[int, str]:
    """Record a stream that failed after it started; the status and message to tell the client."""
    status = 504 if error.kind == "timeout" else 502
    outcome.status = status
    outcome.error = error.message
    log.warning("upstream_stream_failed reason=%s", error.message)
    return status, error.message


def upstream_error_event(outcome: Outcome, error: dict):
    # The upstream reported a failure inside the stream: relayed, and the row says so.
    outcome.status = 502
    outcome.error = f"upstream error event: {error.get('message') or error.get('type') or ''}"


def parse_event(event: bytes):
    """The JSON chunk of a chat-completions SSE event (None for [DONE] or comments).

    Anything else (a line that is no SSE field, data that is not a JSON object)
    raises ProviderError("malformed"): the upstream is not speaking the protocol.
    """
    if event.startswith(b"data:") and b"\n" not in event:
        data = event[5:].strip()
    else:
        parts = []
        for line in event.split(b"\n"):
            name = line.split(b":", 1)[0]
            if name == b"data":
                parts.append(line[5:].removeprefix(b" "))
            elif name not in (b"", b"event", b"id", b"retry"):
                raise ProviderError("malformed", "the upstream sent a stream that is not SSE")
        if not parts:
            return None
        data = b"\n".join(parts).strip()
    if data == b"[DONE]":
        return None
    try:
        chunk = jsonio.loads(data)
    except ValueError:
        chunk = None
    if not isinstance(chunk, dict):
        raise ProviderError("malformed", "the upstream sent an SSE event that is not JSON")
    return chunk


def _finished(choices) -> bool:
    return any(isinstance(c, dict) and c.get("finish_reason") for c in choices or ())


def _answer_chars(choices) -> int:
    total = 0
    for choice in choices or ():
        if not isinstance(choice, dict):
            continue
        part = choice.get("delta") or choice.get("message") or {}
        if isinstance(part, dict):
            content = part.get("content")
            if isinstance(content, str):
                total += len(content)
            for call in part.get("tool_calls") or ():
                if isinstance(call, dict):
                    total += len(str((call.get("function") or {}).get("arguments") or ""))
    return total


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
