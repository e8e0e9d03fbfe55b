"""Recording what the router decided, through one pair of service functions.

A decision row is written before the upstream call (so a crash mid-answer
still leaves a trace) and completed when the answer ends, with status,
attempts, latency and usage.
"""

from datetime import timedelta

from django.utils import timezone

from routing.models import RouteDecision
from routing.pricing import billed_prompt_cost_usd


def record_decision(plan, api_key=None) -> RouteDecision:
    """Write the row for a planned request. Call inside the caller's transaction."""
    model = plan.model
    pinch = plan.pinch
    prefix = plan.prefix or (None, None, None)
    return RouteDecision.objects.create(
        path=plan.path,
        api_key=api_key,
        requested_model=plan.request.model,
        chosen_model=model.id,
        provider=model.provider,
        upstream_model=model.send_as,
        tier=plan.tier,
        classifier=plan.classifier,
        measured_tokens=plan.measured_tokens,
        estimated_cost_usd=plan.estimated_cost_usd,
        pinch_original_tokens=pinch.original_tokens if pinch else None,
        pinch_final_tokens=pinch.final_tokens if pinch else None,
        pinch_summarized=pinch.summarized if pinch else None,
        pinch_tools=pinch.compressed_tools or None if pinch else None,
        relevance_used=bool(pinch and pinch.relevance_used),
        relevance_fallback=bool(pinch and pinch.relevance_fallback),
        prefix_match=prefix[0],
        prefix_previous_length=prefix[1],
        prefix_current_length=prefix[2],
        prefix_fallback=plan.prefix_fallback,
        stream=plan.request.stream,
        conversation=plan.conversation or "",
    )


def finish_decision(decision_id: int, outcome) -> None:
    """Complete a row with what happened upstream (an ``Outcome``)."""
    fields = {
        "status_code": outcome.status,
        "error": outcome.error[:300],
        "attempts": outcome.attempts,
        "upstream_latency_ms": outcome.latency_ms,
        "prompt_tokens": outcome.prompt_tokens,
        "completion_tokens": outcome.completion_tokens,
        "cached_tokens": outcome.cached_tokens,
        "cache_read_tokens": outcome.cache_read_tokens,
        "cache_write_tokens": outcome.cache_write_tokens,
        "usage_estimated": outcome.usage_estimated,
    }
    billed = outcome.prompt_tokens is not None and not outcome.usage_estimated
    if outcome.model is not None and billed:
        fields["billed_prompt_cost_usd"] = billed_prompt_cost_usd(
            outcome.model,
            outcome.prompt_tokens,
            outcome.cache_read_tokens,
            outcome.cache_write_tokens,
        )
    fields["unpruned_cost_usd"] = outcome.unpruned_cost_usd(fields.get("billed_prompt_cost_usd"))
    if outcome.model is not None:
        fields.update(
            chosen_model=outcome.model.id,
            provider=outcome.model.provider,
            upstream_model=outcome.model.send_as,
            estimated_cost_usd=outcome.cost_usd,
        )
    RouteDecision.objects.filter(pk=decision_id).update(**fields)


def purge_decisions(older_than_days: int) -> int:
    """Delete decisions older than that many days; returns how many went.

    The 30-day aggregates never read further back than a billing period, so
    rows older than that only matter to whoever audits them.
    """
    if older_than_days < 1:
        raise ValueError("older_than_days must be at least 1")
    cutoff = timezone.now() - timedelta(days=older_than_days)
    deleted, _ = RouteDecision.objects.filter(created_at__lt=cutoff).delete()
    return deleted
