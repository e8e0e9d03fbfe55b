"""A request a key's limits refuse: the error each client gets, as its real provider words it.

Clients branch on the status and type their provider sends, so a refusal
here looks like the provider's own:

* an exhausted budget: OpenAI answers 429 with type and code
  ``insufficient_quota`` (chat completions and the Responses API); Anthropic
  answers **400** ``invalid_request_error`` "You have reached your specified
  API usage limits. You will regain access on <date> at 00:00 UTC." (what
  its API sends when a workspace's spend limit is reached, as Claude Code
  users report it: anthropics/claude-code#2127, #38035; its docs list a 402
  ``billing_error`` that these reports never show). Neither sends a
  Retry-After: waiting a minute does not help;
* a rate limit: 429 in both, OpenAI's ``rate_limit_exceeded`` code with type
  ``requests`` or ``tokens`` as its API sends them, Anthropic's
  ``rate_limit_error``, and ``Retry-After`` (whole seconds) with
  ``retry-after-ms``, both of which the official SDKs honour when they retry.

Each refusal adds one to a counter row per key and reason (LimitRefusal),
which /metrics reads; a database that cannot count it does not stop the
refusal (logged).
"""

from __future__ import annotations

import logging
import math
from datetime import UTC

from django.db import Error as DatabaseFailure
from django.db.models import F
from django.utils import timezone

from routing.errors import RouterError
from routing.limits.budgets import BudgetState, budget_period
from routing.models import ApiKey, LimitRefusal

log = logging.getLogger("router.limits")

_PERIOD_WORDS = {"day": "daily", "week": "weekly", "month": "monthly"}


class LimitExceeded(RouterError):
    """A key over one of its limits; ``reason`` is LimitRefusal's (budget, rpm, tpm)."""

    def __init__(self, reason: str, message: str, code: str, headers=None, openai_type=None):
        super().__init__(429, message, code, headers=headers)
        self.reason = reason
        self.openai_type = openai_type

    def as_openai(self):
        return 429, self.openai_type

    def as_anthropic(self):
        if self.reason == LimitRefusal.REASON_BUDGET:
            return 400, "invalid_request_error"
        return 429, "rate_limit_error"


def budget_exhausted(key: ApiKey, state: BudgetState) -> LimitExceeded:
    resets = state.resets_at.astimezone(UTC)
    message = (
        f"API key {key.name!r} has reached its {_PERIOD_WORDS[state.period]} budget of "
        f"${state.budget_usd:.2f} (spent ${state.spent_usd:.2f}). You will regain access on "
        f"{resets:%Y-%m-%d at %H:%M} UTC, when the budget resets."
    )
    return LimitExceeded(
        LimitRefusal.REASON_BUDGET, message, "insufficient_quota", openai_type="insufficient_quota"
    )


def budget_reserved(
    key: ApiKey, config, settled: float, reserved: float, cost: float
) -> LimitExceeded:
    """A request whose worst case does not fit what is left of the key's hard budget."""
    period = budget_period(key.budget_period, config, timezone.now())
    resets = period.resets_at.astimezone(UTC)
    left = max(key.budget_usd - settled - reserved, 0.0)
    message = (
        f"API key {key.name!r} has ${left:.2f} left of its {_PERIOD_WORDS[key.budget_period]} "
        f"budget of ${key.budget_usd:.2f} (spent ${settled:.2f}, ${reserved:.2f} held by "
        f"requests in flight), and this request may cost up to ${cost:.2f}. Ask for a shorter "
        f"answer (max_tokens), or wait: the budget resets on {resets:%Y-%m-%d at %H:%M} UTC."
    )
    return LimitExceeded(
        LimitRefusal.REASON_BUDGET, message, "insufficient_quota", openai_type="insufficient_quota"
    )


def rate_limited(key: ApiKey, reason: str, wait_ms: int, limit: int, asked: int) -> LimitExceeded:
    unit = "requests" if reason == LimitRefusal.REASON_RPM else "prompt tokens"
    seconds = wait_ms / 1000
    message = (
        f"Rate limit reached for API key {key.name!r} on {unit} per minute: limit {limit}, "
        f"requested {asked}. Please try again in {seconds:.3g}s."
    )
    headers = {"Retry-After": str(max(math.ceil(seconds), 1)), "retry-after-ms": str(wait_ms)}
    return LimitExceeded(
        reason,
        message,
        "rate_limit_exceeded",
        headers=headers,
        openai_type="requests" if reason == LimitRefusal.REASON_RPM else "tokens",
    )


def too_large(key: ApiKey, limit: int, asked: int) -> LimitExceeded:
    """A prompt larger than the key's whole minute: no wait makes it pass, so no Retry-After."""
    message = (
        f"Request too large for API key {key.name!r} on prompt tokens per minute: limit "
        f"{limit}, requested {asked}. Send a smaller prompt or raise the key's limit."
    )
    return LimitExceeded(
        LimitRefusal.REASON_TPM, message, "rate_limit_exceeded", openai_type="tokens"
    )


def count_refusal(key: ApiKey, reason: str) -> None:
    """One more refusal of ``reason`` for ``key``; never raises."""
    try:
        now = timezone.now()
        counted = LimitRefusal.objects.filter(api_key=key, reason=reason).update(
            count=F("count") + 1, last_at=now
        )
        if not counted:
            row, created = LimitRefusal.objects.get_or_create(
                api_key=key, reason=reason, defaults={"count": 1, "last_at": now}
            )
            if not created:  # another worker made the row first
                LimitRefusal.objects.filter(pk=row.pk).update(count=F("count") + 1, last_at=now)
    except DatabaseFailure as error:
        log.warning("limit_refusal_uncounted key=%s reason=%s: %s", key.pk, reason, error)
