"""The API: POST /v1/chat/completions, POST /v1/messages (+ count_tokens), POST /v1/responses
(+ GET and DELETE /v1/responses/{id}, GET .../input_items), GET /v1/models[/{id}].

Views are thin: authenticate, parse the body with the one schema of its
protocol, call the pipeline, render. The three completion endpoints are one
view, ``CompletionView``, parametrised by its client protocol
(routing.protocols.base.ClientProtocol: the parser, the dispatcher's wire,
the error shape). Every view authenticates through one policy, ``ApiView``:
the router key is checked before the handler runs, and any RouterError
leaves in the view's protocol's error shape. The views are plain Django
views: they read the raw body themselves, so DRF's request wrapping, content
negotiation and parsers would be work for nothing on the hot path, and any
``Accept`` is served (Codex CLI asks for ``text/event-stream``).
"""

import time

from django.conf import settings
from django.http import JsonResponse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from routing.auth import KeyCheckUnavailable, key_for_request
from routing.config.store import api_config
from routing.dispatch import relay
from routing.errors import (
    RouterError,
    body_too_large_error,
    database_unavailable_error,
    invalid_key_error,
)
from routing.limits.admission import admit
from routing.model_list import model_entry, model_list
from routing.pipeline import open_decision, plan_request
from routing.protocols.base import ClientProtocol
from routing.protocols.chat.wire import CHAT
from routing.protocols.messages.request import parse_messages_body
from routing.protocols.messages.wire import MESSAGES, count_tokens, forwarded_headers
from routing.protocols.responses.store import delete_response, input_items_page, stored_response
from routing.providers import model_provider
from routing.request_ids import decision_request_id
from routing.sessions import session_tag

DRY_RUN_HEADER = "HTTP_X_ROUTER_DRY_RUN"


def authenticated_key(request):
    """The request's router key (an ApiKey), or RouterError: 401; 503 when it cannot be checked."""
    try:
        key = key_for_request(request)
    except KeyCheckUnavailable:
        raise database_unavailable_error("the API key cannot be checked") from None
    if key is None:
        raise invalid_key_error(request.path)
    return key


@method_decorator(csrf_exempt, name="dispatch")
class ApiView(View):
    """The policy of every API view: a router key first, every refusal in the protocol's shape.

    ``request.api_key`` is the caller's key when the handler runs. A method
    the view does not serve is a 405 before the key is looked at.
    """

    protocol: ClientProtocol = CHAT

    def dispatch(self, request, *args, **kwargs):
        if request.method.lower() not in self.http_method_names:
            return self.http_method_not_allowed(request)
        try:
            request.api_key = authenticated_key(request)
            return super().dispatch(request, *args, **kwargs)
        except RouterError as error:
            return self.protocol.render_error(error)

    def http_method_not_allowed(self, request, *args, **kwargs):
        allowed = " or ".join(m.upper() for m in self.http_method_names)
        response = self.protocol.render_error(
            RouterError(
                405,
                f"Method {request.method} is not allowed here; use {allowed}.",
                "method_not_allowed",
            )
        )
        response["Allow"] = ", ".join(m.upper() for m in self.http_method_names)
        return response


def _read_body(request) -> bytes:
    limit = settings.ROUTER_MAX_BODY_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise body_too_large_error(declared, limit)
    raw = request.body
    if len(raw) > limit:
        raise body_too_large_error(None, limit)
    return raw


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


class CompletionView(ApiView):
    """A completion endpoint: parse, plan, check, record, dispatch; one path for every protocol."""

    http_method_names = ["post"]

    def post(self, request):
        started = time.monotonic()
        key = request.api_key
        planned = self.protocol.parse(_read_body(request), request, key)
        config = api_config()
        dry_run = request.META.get(DRY_RUN_HEADER, "") in ("1", "true", "yes")
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
        plan.session = session_tag(request.META, planned, key.pk, plan.conversation)
        wire = self.protocol.wire(request, planned, key, config)
        wire.check(plan, model_provider(config, plan.model))
        admission.take(plan.measured_tokens)
        decision = open_decision(plan, key)
        headers = explain_headers(plan, decision) | admission.headers()
        headers["X-Router-Overhead-Ms"] = f"{(time.monotonic() - started) * 1000:.2f}"
        if planned.stream:
            return relay.stream(plan, decision, headers, wire)
        return relay.complete(plan, decision, headers, wire)


class CountTokensView(ApiView):
    """The prompt's input tokens: the Claude upstream's count, else the router's estimate."""

    protocol = MESSAGES
    http_method_names = ["post"]

    def post(self, request):
        planned = parse_messages_body(_read_body(request), count_only=True)
        config = api_config()
        plan = plan_request(planned, config, api_key_id=request.api_key.pk, measure_prefix=False)
        provider = model_provider(config, plan.model)
        return JsonResponse(count_tokens(plan, provider, forwarded_headers(request)))


class ResponseView(ApiView):
    """A stored response: read it back, or delete it."""

    http_method_names = ["get", "delete"]

    def get(self, request, response_id):
        return JsonResponse(stored_response(request.api_key.pk, response_id).response)

    def delete(self, request, response_id):
        delete_response(request.api_key.pk, response_id)
        return JsonResponse({"id": response_id, "object": "response.deleted", "deleted": True})


class ResponseInputItemsView(ApiView):
    """The input items a stored response answered, a page at a time."""

    http_method_names = ["get"]

    def get(self, request, response_id):
        return JsonResponse(input_items_page(request.api_key.pk, response_id, request.GET))


class ModelsView(ApiView):
    """The models a client can ask for now, in a list both SDKs read (routing.model_list)."""

    http_method_names = ["get"]

    def get(self, request):
        return JsonResponse(model_list(api_config(), int(time.time())))


class ModelView(ApiView):
    """GET /v1/models/{id}: what the SDKs' ``models.retrieve`` calls."""

    http_method_names = ["get"]

    def get(self, request, model_id):
        return JsonResponse(model_entry(api_config(), model_id, int(time.time())))
