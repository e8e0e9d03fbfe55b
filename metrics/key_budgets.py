"""Spend against budget per key: the rows the dashboard, the snapshot (TUI) and /metrics show.

One home for the figures: each key's spend is ``routing.limits.budgets``'s
(the number a request is checked against), here with its limits, its state
and how many requests its limits refused, formatted once (``cells``) for
the dashboard and the TUI. Only active keys with a limit are listed. Queries:
one for the keys with their refusal counts, one per budget period in use.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q, Sum
from django.utils import timezone

from routing.config import RouterConfig
from routing.formatting import MISSING, format_count, format_money
from routing.limits.budgets import has_budget, spend_by_key
from routing.models import ApiKey, LimitRefusal

LIMITED = (
    Q(rpm_limit__isnull=False)
    | Q(tpm_limit__isnull=False)
    | Q(budget_usd__isnull=False)
    | Q(soft_budget_usd__isnull=False)
)
REASONS = [reason for reason, _ in LimitRefusal.REASONS]

# What a key's state reads as, by severity.
STATE_NONE, STATE_OK = "no budget", "within budget"
STATE_SOFT, STATE_EXHAUSTED = "past soft budget", "budget spent"


# How the state is coloured: a CSS class of the pill.
_SEVERITY = {STATE_NONE: "", STATE_OK: "ok", STATE_SOFT: "warn", STATE_EXHAUSTED: "bad"}


def _state(state, key: ApiKey) -> str:
    if state.exhausted:
        return STATE_EXHAUSTED
    if state.past_soft:
        return STATE_SOFT
    return STATE_OK if has_budget(key) else STATE_NONE


def key_budget_rows(config: RouterConfig, now: datetime | None = None) -> list[dict]:
    """One JSON-ready row per limited active key, by name."""
    now = now or timezone.now()
    refused = {
        f"refused_{reason}": Sum("refusals__count", filter=Q(refusals__reason=reason))
        for reason in REASONS
    }
    keys = list(ApiKey.objects.active().filter(LIMITED).annotate(**refused).order_by("name", "pk"))
    states = spend_by_key(keys, config, now)
    rows = []
    for key in keys:
        state = states[key.pk]
        rows.append(
            {
                "key": key.name,
                "prefix": key.prefix,
                "period": state.period,
                "spent_usd": round(state.spent_usd, 6),
                "budget_usd": key.budget_usd,
                "soft_budget_usd": key.soft_budget_usd,
                "share_used": state.share_used,
                "state": _state(state, key),
                "resets_at": state.resets_at.isoformat(),
                "rpm_limit": key.rpm_limit,
                "tpm_limit": key.tpm_limit,
                "budget_fallback": key.budget_fallback,
                "refusals": {reason: getattr(key, f"refused_{reason}") or 0 for reason in REASONS},
            }
        )
    return rows


def cells(row: dict) -> dict:
    """A row's figures as the dashboard and the TUI show them."""
    budget = row["budget_usd"]
    soft = row["soft_budget_usd"]
    share = row["share_used"]
    rates = [
        f"{format_count(row['rpm_limit'])} rpm" if row["rpm_limit"] else "",
        f"{format_count(row['tpm_limit'])} tpm" if row["tpm_limit"] else "",
    ]
    return {
        "key": row["key"],
        "spent": f"{format_money(row['spent_usd'])} this {row['period']}",
        "budget": MISSING if budget is None else format_money(budget),
        "soft": MISSING if soft is None else format_money(soft),
        "used": MISSING if share is None else f"{share * 100:.0f}%",
        "state": row["state"] + (" · auto a tier cheaper" if row["budget_fallback"] else ""),
        "severity": _SEVERITY[row["state"]],
        "resets": row["resets_at"][:16].replace("T", " "),
        "rates": " · ".join(r for r in rates if r) or MISSING,
        "refused": " · ".join(f"{n} {reason}" for reason, n in row["refusals"].items() if n) or "0",
    }
