"""Retries and fallback: the candidates tried in order until one answers.

On a connect error, a timeout, or a 429/5xx, the same model is tried once
more after a short jittered pause; an upstream that says when to come back
(``retry-after``) is waited for instead when that is soon, and skipped for
the next candidate when it is not. On the routed path the next candidate
follows (same tier by price, then the tiers above). Any other failure (a 400
from the upstream, a malformed answer) ends the chain. Every candidate and
try share the request's deadline (``routing.request_deadline_seconds``,
routing/providers/deadlines.py): auto trying six hanging models twice each
took 61 s at ``timeout_seconds: 5``.
"""

import logging
import random
import time

from routing.dispatch.failures import tried
from routing.dispatch.outcome import Outcome
from routing.errors import ProviderError
from routing.providers import CallContext, monotonic_ms
from routing.providers.deadlines import request_deadline, request_seconds_left
from routing.recall.serving import recalling

# Failures where no model ran: the connection failed, or the provider has no key.
# Nothing was billed, so the row and /metrics charge no model with them.
NOTHING_RAN = ("connect", "unconfigured")

log = logging.getLogger(__name__)

TRIES_PER_MODEL = 2  # the first try and one retry on the same model
# A retry-after up to this is waited out before the retry on the same model;
# a longer one would hold the client: the next candidate is tried instead.
MAX_RETRY_AFTER_SECONDS = 5.0
# Without a retry-after, the pause before a retry on the same model: full
# jitter up to BACKOFF_BASE_SECONDS * 2**retry, so retries of many requests
# failing together spread out instead of reaching the upstream in one burst.
BACKOFF_BASE_SECONDS = 0.25


class UpstreamFailed(Exception):
    def __init__(self, error: ProviderError):
        super().__init__(error.message)
        self.error = error


def call_with_fallback(plan, outcome: Outcome, send):
    """Run ``send(provider, model, context)`` down the chain; return (model, result, start_ms).

    A retryable failure is tried once more on the same model (after waiting
    out a short retry-after), then the next candidate; a long retry-after or
    an unset key variable skips to the next candidate at once; any other
    failure (a 400 from the upstream, a malformed answer) ends the chain. All
    of it within ``routing.request_deadline_seconds``: past it, a 504.
    """
    with request_deadline(plan.config.routing.request_deadline_seconds):
        return _down_the_chain(plan, outcome, send)


def _down_the_chain(plan, outcome: Outcome, send):
    last_error = None
    for model, provider in zip(plan.candidates, plan.providers, strict=True):
        # The router's own tool is answered below the wire, in the upstream's shape.
        provider = recalling(provider, plan, outcome)
        context = CallContext(model, plan.stable_prefixes)
        for attempt in range(TRIES_PER_MODEL):
            if request_seconds_left() <= 0:
                raise UpstreamFailed(_past_deadline(plan, outcome))
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
                    outcome.cost_usd = plan.costs[model.id]
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
            outcome.cost_usd = plan.costs[model.id]
            outcome.unpruned_split = plan.unpruned_split
            return model, result, started
    raise UpstreamFailed(last_error)


def _past_deadline(plan, outcome: Outcome) -> ProviderError:
    seconds = plan.config.routing.request_deadline_seconds
    message = f"the request's deadline of {seconds:g}s (routing.request_deadline_seconds) passed"
    # Named in the answer's "Tried ..." sentence and on the row, after the tries it cut short.
    outcome.attempts.append(
        {"model": "router", "result": "timeout", "status": None, "ms": 0, "reason": message}
    )
    return ProviderError("timeout", message)


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
    left = request_seconds_left()
    time.sleep(pause if left is None else max(min(pause, left), 0.0))
    return True
