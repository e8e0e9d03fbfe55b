"""Admitting a request under its key's limits, before any upstream call.

Two steps, because the token limit needs what pinch made of the request:

1. ``admit(key, config)``, before planning: a key at or over its hard budget
   is refused; so is one over its rpm (the request is taken from its bucket
   then: a refused request, however large, costs no planning); past its
   soft budget, the answer carries ``X-Router-Budget-Warning`` and, when
   the key has ``budget_fallback``, ``auto`` goes a tier cheaper;
2. ``Admission.take(measured_tokens)``, after planning: the prompt tokens
   measured after pinch, from the key's per-minute token bucket;
3. as the decision opens (routing.pipeline.open_decision), the request's
   worst case reserved on the key's hard budget (routing.limits.ledger).

A key with no limits costs neither a query nor a bucket. A refusal is counted
(routing.limits.refusals) and raised as a RouterError the view renders in the
client's protocol; nothing is recorded as a decision, as no upstream was called.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from datetime import UTC

from django.conf import settings

from routing.config import RouterConfig
from routing.limits import rate
from routing.limits.budgets import BudgetState, has_budget, spend_cache
from routing.limits.ledger import forget_ledgers
from routing.limits.refusals import budget_exhausted, count_refusal, rate_limited, too_large
from routing.models import ApiKey, LimitRefusal

WARNING_HEADER = "X-Router-Budget-Warning"


@dataclass
class Admission:
    key: ApiKey
    budget: BudgetState | None = None
    limited: bool = True  # False: take nothing (a dry run)

    @property
    def cheaper_tier(self) -> bool:
        """Should auto go a tier cheaper (the key's budget fallback, past its soft budget)?"""
        return bool(self.key.budget_fallback and self.budget and self.budget.past_soft)

    def headers(self) -> dict:
        """The soft budget's warning, on every answer past it."""
        state = self.budget
        if state is None or not state.past_soft:
            return {}
        hard = f"; hard limit ${state.budget_usd:.2f}" if state.budget_usd is not None else ""
        fallback = "; auto goes a tier cheaper" if self.cheaper_tier else ""
        resets = state.resets_at.astimezone(UTC)
        return {
            WARNING_HEADER: f"key {self.key.name!r} spent ${state.spent_usd:.2f} of its "
            f"{state.period} soft budget ${state.soft_budget_usd:.2f}{hard}{fallback}; "
            f"resets {resets:%Y-%m-%dT%H:%M:%SZ}"
        }

    def take_request(self) -> None:
        """Take this request from the key's request bucket, or refuse: before planning."""
        key = self.key
        rpm = key.rpm_limit or 0
        if not self.limited or not rpm:
            return
        outcome = rate_buckets().take(key.pk, rpm, key.tpm_limit or 0, 0, count=1)
        if not outcome.taken:
            count_refusal(key, outcome.short)
            raise rate_limited(key, outcome.short, outcome.wait_ms, rpm, 1)

    def take(self, measured_tokens: int) -> None:
        """Take ``measured_tokens`` from the key's token bucket, or refuse: after planning."""
        key = self.key
        tpm = key.tpm_limit or 0
        if not self.limited or not tpm:
            return
        if measured_tokens > tpm:
            count_refusal(key, LimitRefusal.REASON_TPM)
            raise too_large(key, tpm, measured_tokens)
        outcome = rate_buckets().take(key.pk, key.rpm_limit or 0, tpm, measured_tokens, count=0)
        if not outcome.taken:
            count_refusal(key, outcome.short)
            raise rate_limited(key, outcome.short, outcome.wait_ms, tpm, measured_tokens)


def admit(key: ApiKey, config: RouterConfig, dry_run: bool = False) -> Admission:
    """The key's admission for this request; raises LimitExceeded when its budget is spent
    or it is over its requests per minute.

    A dry run (X-Router-Dry-Run) calls no upstream: it is never refused nor counted.
    """
    if dry_run:
        return Admission(key, limited=False)
    admission = Admission(key)
    if has_budget(key):
        admission.budget = spend_cache.state(key, config)
        if admission.budget is not None and admission.budget.exhausted:
            count_refusal(key, LimitRefusal.REASON_BUDGET)
            raise budget_exhausted(key, admission.budget)
    admission.take_request()
    return admission


def rate_buckets() -> rate.FileBuckets | rate.RedisBuckets:
    """The per-minute buckets where the settings put them: Redis, else the data folder's files."""
    return rate.buckets(settings.REDIS_URL, _limits_dir(settings.DATA_DIR))


@functools.lru_cache(maxsize=8)
def _limits_dir(data_dir) -> str:
    """Joined once per data folder: asked twice a request of a key with limits."""
    return os.path.join(data_dir, "limits")


def forget_limit_state() -> None:
    """Drop this process's cached spends and memory buckets (tests; a fresh start)."""
    spend_cache.forget()
    rate.forget_buckets()
    forget_ledgers()
