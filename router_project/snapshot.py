"""The admin snapshot (``GET /admin/api/snapshot``): one JSON document the TUI renders.

``build_snapshot`` returns plain JSON types only (ISO strings for times), so a
caller in process and a client of ``GET /admin/api/snapshot`` see the same
thing. Queries on top of the caller's config: the pinch summary, the stored
overrides, the newest decisions, the savings by cause, and the limited keys
(one, plus one per budget period in use: metrics.key_budgets).
"""

from __future__ import annotations

from datetime import datetime

from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache

from metrics.key_budgets import key_budget_rows
from metrics.permissions import is_staff_request, may_view_decisions
from metrics.savings import savings_by_cause
from metrics.summary import pinch_summary
from metrics.views import get_only
from routing.config import RouterConfig
from routing.config.store import current_config, stored_overrides
from routing.knobs import knob_values
from routing.models import RECENT_DECISIONS, RouteDecision, tokens_saved
from routing.protocols.chat.errors import error_response

_DECISION_FIELDS = (
    "id",
    "created_at",
    "path",
    "requested_model",
    "chosen_model",
    "tier",
    "status_code",
    "stream",
    "pinch_original_tokens",
    "pinch_final_tokens",
    "pinch_summarized",
    "relevance_used",
    "upstream_latency_ms",
    "prompt_tokens",
    "completion_tokens",
)


def _decision_json(row: dict) -> dict:
    original, final = row["pinch_original_tokens"], row["pinch_final_tokens"]
    return {
        "id": row["id"],
        "created_at": row["created_at"].isoformat(),
        "path": row["path"],
        "requested_model": row["requested_model"],
        "chosen_model": row["chosen_model"],
        "tier": row["tier"],
        "status_code": row["status_code"],
        "stream": row["stream"],
        "pinch_original_tokens": original,
        "pinch_final_tokens": final,
        "tokens_saved": tokens_saved(original, final),
        "pinch_summarized": row["pinch_summarized"],
        "relevance_used": row["relevance_used"],
        "upstream_latency_ms": row["upstream_latency_ms"],
        "prompt_tokens": row["prompt_tokens"],
        "completion_tokens": row["completion_tokens"],
    }


def recent_decisions(limit: int = RECENT_DECISIONS) -> list[dict]:
    rows = RouteDecision.objects.values(*_DECISION_FIELDS).recent(limit)
    return [_decision_json(row) for row in rows]


def build_snapshot(
    config: RouterConfig, now: datetime | None = None, show_decisions: bool = True
) -> dict:
    """The admin snapshot; ``recent_decisions`` and ``key_budgets`` (tenant data) are empty
    for who may not view decisions."""
    now = now or timezone.now()
    return {
        "pinch": pinch_summary(config, now=now),
        "knobs": knob_values(config),
        "config_overrides": stored_overrides(),
        "recent_decisions": recent_decisions() if show_decisions else [],
        "key_budgets": key_budget_rows(config, now) if show_decisions else [],
        "savings_by_cause": savings_by_cause(config, now=now),
        "generated_at": now.isoformat(),
    }


@never_cache
@get_only
def snapshot_view(request):
    if not is_staff_request(request):
        return error_response(
            403, "Staff only: log in to admin as staff, or use a staff API key.", "staff_only"
        )
    return JsonResponse(
        build_snapshot(current_config(), show_decisions=may_view_decisions(request))
    )
