"""One completion, from the parsed request to the answer: the service every completion view calls.

The view parses the body (its protocol's one schema) and hands the planned
request here; this runs the steps in their contract order, each once:

1. admit: the key's budget and rpm (routing.limits), before any planning;
2. plan (routing.pipeline.plan_request): tier, pinch, measure, choose; a dry
   run answers the plan here;
3. freeze: what only the request's edge knows joins the plan (the agent
   session, the built-in tools left out for the chosen model, or the
   protocol's refusal), and the passthrough capability check runs; from here
   the plan is frozen (routing.plan) and nothing writes to it;
4. take the key's tpm on the measured prompt; open the decision (its id, the
   journal; no row yet: a request refused above leaves none);
5. dispatch (routing.dispatch.relay): the attempts, the relay, the row when
   the answer ends.

Dispatch, the wires and the providers take what they need from the frozen
plan as arguments; none calls back into planning.
"""

import time

from django.http import JsonResponse

from routing.config.store import api_config
from routing.dispatch import relay
from routing.errors import RouterError
from routing.explain import dry_run_body, explain_headers
from routing.limits.admission import admit
from routing.limits.ledger import held as budget_held
from routing.models import RouteDecision
from routing.pipeline import plan_request
from routing.recording.decisions import new_decision
from routing.recording.health import require_recording
from routing.sessions import session_tag

DRY_RUN_HEADER = "HTTP_X_ROUTER_DRY_RUN"


def complete(protocol, planned, meta, key, started: float):
    """The answer to one parsed completion request (a Django response), or RouterError."""
    config = api_config()
    dry_run = meta.get(DRY_RUN_HEADER, "") in ("1", "true", "yes")
    admission = admit(key, config, dry_run)
    plan = plan_request(
        planned,
        config,
        api_key_id=key.pk,
        measure_prefix=not dry_run,
        cheaper_tier=admission.cheaper_tier,
    )
    if dry_run:
        return JsonResponse(dry_run_body(plan), headers=explain_headers(plan))
    plan = _frozen(protocol, plan, meta, key)
    admission.take(plan.measured_tokens)
    decision = open_decision(plan, key)
    headers = explain_headers(plan, decision) | admission.headers()
    headers["X-Router-Overhead-Ms"] = f"{(time.monotonic() - started) * 1000:.2f}"
    if planned.stream:
        return relay.stream(plan, decision, headers, protocol.wire)
    return relay.complete(plan, decision, headers, protocol.wire)


def _frozen(protocol, plan, meta, key):
    """The plan with what the edge decides, checked for the chosen model: what dispatch gets."""
    source = plan.request.source
    omitted = ()
    if source is not None and not getattr(plan.providers[0].capabilities, source.native_capability):
        refused = None
        if source.needs_native and protocol.refusal is not None:
            refused = protocol.refusal(plan)
        if refused is not None:
            raise refused
        omitted = tuple(source.builtin_tools)
    if plan.path == RouteDecision.PATH_PASSTHROUGH:
        check_capabilities(plan.model, plan.request)
    session = session_tag(meta, plan.request, key.pk, plan.conversation)
    return plan.at_the_edge(session, omitted)


def check_capabilities(model, request) -> None:
    """422 for a pinned model that cannot possibly serve the request."""
    if request.has_images and not model.has("vision"):
        raise RouterError(
            422, f"The model {model.id!r} does not accept images.", "unsupported_capability"
        )
    if request.wants_json and not model.has("json_mode"):
        raise RouterError(
            422, f"The model {model.id!r} does not support JSON mode.", "unsupported_capability"
        )


def open_decision(plan, api_key=None):
    """Accept the frozen plan: open its decision (no row until the answer ends).

    A request the checks rejected has no decision, so it leaves no row; a
    pruned passthrough that passed carries its real pinch tokens on the row.
    """
    # No upstream call that could not be recorded, unless the operator allows it.
    require_recording(plan.config.routing.serve_unrecorded)
    # The key's budget: the request's worst case reserved, given back if the decision fails to open.
    with budget_held(plan, api_key) as hold:
        return new_decision(plan, api_key, hold)
