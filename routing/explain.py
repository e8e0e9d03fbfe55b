"""What the router did, told to the client: the X-Router-* headers and the dry run's body.

Read off the frozen plan (routing.plan) and the decision it opened, by the
completion service (routing.completion) for every answer; docs/explain.md
says what each header means.
"""

from routing.request_ids import decision_request_id


def explain_headers(plan, decision=None) -> dict:
    """What the router did, on every answer (see docs/explain.md)."""
    headers = {
        "X-Router-Path": plan.path,
        "X-Router-Model": plan.model.id,
        "X-Router-Tier": plan.tier,
        "X-Router-Measured-Tokens": str(plan.measured_tokens),
        "X-Router-Relevance": "used" if plan.pinch and plan.pinch.relevance_used else "no",
    }
    if plan.route_reason:
        headers["X-Router-Route"] = plan.route_reason
    if plan.background:
        headers["X-Router-Background"] = plan.background
    if plan.pinch is not None:
        headers["X-Router-Pinch-Original-Tokens"] = str(plan.pinch.original_tokens)
        headers["X-Router-Pinch-Final-Tokens"] = str(plan.pinch.final_tokens)
        headers["X-Router-Pinch-Compressed"] = str(len(plan.pinch.compressed))
        headers["X-Router-Pinch-Capped"] = str(len(plan.pinch.capped))
    else:
        headers["X-Router-Pinch"] = "disabled"
    if plan.session is not None:
        headers["X-Router-Session"] = plan.session.session
    if plan.omitted_tools:
        headers["X-Router-Omitted-Tools"] = ",".join(plan.omitted_tools)
    if plan.over_window:
        headers["X-Router-Window-Exceeded"] = (
            f"{plan.needed_window} tokens (prompt + max_tokens) sent to {plan.model.id}, "
            f"whose context window is {plan.model.context_window}"
        )
    if decision is not None and decision.id is not None:
        headers["X-Router-Decision-Id"] = str(decision.id)
        # The SDKs read x-request-id into ``request_id``: quoting it finds the row.
        headers["X-Request-Id"] = decision_request_id(decision.id, decision.fields["created_at"])
    return headers


def dry_run_body(plan) -> dict:
    """What a dry run (``X-Router-Dry-Run``) answers: the plan, nothing sent."""
    pinch = plan.pinch
    return {
        "dry_run": True,
        "path": plan.path,
        "requested_model": plan.request.model,
        "chosen_model": plan.model.id,
        "provider": plan.model.provider,
        "upstream_model": plan.model.send_as,
        "fallbacks": [m.id for m in plan.candidates[1:]],
        "tier": plan.tier,
        "classifier": plan.classifier,
        "route_reason": plan.route_reason,
        "background": plan.background,
        "measured_tokens": plan.measured_tokens,
        "estimated_cost_usd": round(plan.estimated_cost_usd, 8),
        "pinch": None
        if pinch is None
        else {
            "original_tokens": pinch.original_tokens,
            "final_tokens": pinch.final_tokens,
            "tokens_saved": pinch.tokens_saved,
            "summarized": pinch.summarized,
            "compressed": pinch.compressed,
            "capped": pinch.capped,
            "relevance_used": pinch.relevance_used,
        },
        "messages": plan.send_messages,
    }
