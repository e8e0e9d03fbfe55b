"""The API: POST /v1/chat/completions, POST /v1/messages (+ count_tokens), POST /v1/responses
(+ GET and DELETE /v1/responses/{id}, GET .../input_items), GET /v1/models[/{id}].

Views are thin: authenticate, parse the body with the one schema of its
protocol, call the pipeline, render. The three completion endpoints run the same
``_serve``; what differs is the parser, the dispatcher's wire and the error
shape (OpenAI's, or Anthropic's on /v1/messages), through routing.errors. Any
other path under /v1 (``unknown_endpoint``) gets a JSON 404 that lists the
endpoints served: an SDK calling one the router does not serve learns which.
The completion views are plain Django views: they read the raw body
themselves, so DRF's request wrapping, content negotiation and parsers would
be work for nothing on the hot path.
"""

import time
from datetime import UTC, datetime

from django.conf import settings
from django.db import Error as DatabaseFailure
from django.http import JsonResponse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.views import APIView

from router_project.request_ids import decision_request_id
from routing import dispatch
from routing.auth import KeyCheckUnavailable, key_for_request
from routing.chat_request import parse_chat_body
from routing.config.store import current_config
from routing.errors import (
    MESSAGES_PATH,
    RouterError,
    anthropic_error_response,
    body_too_large_error,
    database_unavailable_error,
    error_response,
    invalid_key_error,
    router_error_response,
)
from routing.messages_request import parse_messages_body
from routing.messages_wire import MessagesWire, count_tokens, forwarded_headers
from routing.models import ApiKey
from routing.pipeline import open_decision, plan_request, unknown_model_error
from routing.responses_request import parse_responses_body
from routing.responses_store import delete_response, input_items_page, stored_response
from routing.responses_wire import ResponsesWire, optional_tools

DRY_RUN_HEADER = "HTTP_X_ROUTER_DRY_RUN"


class AnyAccept(BaseContentNegotiation):
    """The API answers JSON or an event stream whatever ``Accept`` says.

    The views build their responses themselves; DRF's negotiation would only
    refuse clients that ask for ``text/event-stream`` (Codex CLI does) with a 406.
    """

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class ApiView(APIView):
    content_negotiation_class = AnyAccept


def _authenticated_key(request) -> ApiKey:
    try:
        key = key_for_request(request)
    except KeyCheckUnavailable:
        raise database_unavailable_error("the API key cannot be checked") from None
    if key is None:
        raise invalid_key_error(request.path)
    return key


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
    if plan.pinch is not None:
        headers["X-Router-Pinch-Original-Tokens"] = str(plan.pinch.original_tokens)
        headers["X-Router-Pinch-Final-Tokens"] = str(plan.pinch.final_tokens)
        headers["X-Router-Pinch-Compressed"] = str(len(plan.pinch.compressed))
        headers["X-Router-Pinch-Capped"] = str(len(plan.pinch.capped))
    else:
        headers["X-Router-Pinch"] = "disabled"
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


def _config():
    try:
        return current_config()
    except DatabaseFailure:
        raise database_unavailable_error("the configuration cannot be read") from None


def _serve(request, parse, wire_for, render_error):
    """Authenticate, parse, plan, record, dispatch: every completion endpoint's one path."""
    started = time.monotonic()
    try:
        key = _authenticated_key(request)
        chat = parse(_read_body(request), key)
        config = _config()
        dry_run = request.META.get(DRY_RUN_HEADER, "") in ("1", "true", "yes")
        plan = plan_request(chat, config, api_key_id=key.pk, measure_prefix=not dry_run)
        if dry_run:
            return JsonResponse(dry_run_body(plan), headers=explain_headers(plan))
        wire = wire_for(request, chat, key, config)
        wire.check(plan)
        decision = open_decision(plan, key)
    except RouterError as error:
        return render_error(error)
    headers = explain_headers(plan, decision)
    headers["X-Router-Overhead-Ms"] = f"{(time.monotonic() - started) * 1000:.2f}"
    if chat.stream:
        return dispatch.stream(plan, decision, headers, wire)
    return dispatch.complete(plan, decision, headers, wire)


def _anthropic_error(error: RouterError):
    return anthropic_error_response(error.status, error.message)


@method_decorator(csrf_exempt, name="dispatch")
class OpenAIView(View):
    """An OpenAI completion endpoint: POST only, every error in the OpenAI shape."""

    http_method_names = ["post"]

    def http_method_not_allowed(self, request, *args, **kwargs):
        return error_response(
            405,
            f"Method {request.method} is not allowed here; use POST.",
            "method_not_allowed",
            headers={"Allow": "POST"},
        )


class ChatCompletionsView(OpenAIView):
    def post(self, request):
        return _serve(
            request,
            lambda raw, key: parse_chat_body(raw),
            lambda request, chat, key, config: dispatch.CHAT,
            router_error_response,
        )


@method_decorator(csrf_exempt, name="dispatch")
class AnthropicView(View):
    """A Messages API endpoint: POST only, every error in Anthropic's shape."""

    http_method_names = ["post"]

    def http_method_not_allowed(self, request, *args, **kwargs):
        response = anthropic_error_response(
            405, f"Method {request.method} is not allowed here; use POST."
        )
        response["Allow"] = "POST"
        return response


class MessagesView(AnthropicView):
    """The Anthropic Messages API, for Claude Code (ANTHROPIC_BASE_URL at the router)."""

    def post(self, request):
        return _serve(
            request,
            lambda raw, key: parse_messages_body(raw),
            lambda request, chat, key, config: MessagesWire(forwarded_headers(request), chat.model),
            _anthropic_error,
        )


class CountTokensView(AnthropicView):
    """The prompt's input tokens: the Claude upstream's count, else the router's estimate."""

    def post(self, request):
        try:
            key = _authenticated_key(request)
            chat = parse_messages_body(_read_body(request), count_only=True)
            plan = plan_request(chat, _config(), api_key_id=key.pk, measure_prefix=False)
        except RouterError as error:
            return _anthropic_error(error)
        return JsonResponse(count_tokens(plan, forwarded_headers(request)))


def _model_object(config, model_id: str, created: int) -> dict | None:
    """One entry of GET /v1/models: OpenAI's fields, Anthropic's, and the router's own."""
    entry = {
        "id": model_id,
        "object": "model",
        "created": created,
        "owned_by": "router",
        "type": "model",
        "display_name": model_id,
        "created_at": datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if model_id == config.routing.auto_model:
        return entry
    model = config.model(model_id)
    if model is None:
        return None
    return {
        **entry,
        "owned_by": model.provider,
        "tier": model.tier,
        "context_window": model.context_window,
        "capabilities": list(model.capabilities),
    }


class ResponsesView(OpenAIView):
    """The OpenAI Responses API, for Codex CLI and the openai-agents SDK."""

    def post(self, request):
        return _serve(
            request,
            lambda raw, key: parse_responses_body(raw, key.pk, optional_tools(request)),
            lambda request, chat, key, config: ResponsesWire(
                chat, key.pk, config.responses.store_ttl_hours
            ),
            router_error_response,
        )


class ResponseView(ApiView):
    """A stored response: read it back, or delete it."""

    def get(self, request, response_id):
        try:
            key = _authenticated_key(request)
            row = stored_response(key.pk, response_id)
        except RouterError as error:
            return router_error_response(error)
        return JsonResponse(row.response)

    def delete(self, request, response_id):
        try:
            key = _authenticated_key(request)
            delete_response(key.pk, response_id)
        except RouterError as error:
            return router_error_response(error)
        return JsonResponse({"id": response_id, "object": "response.deleted", "deleted": True})


class ResponseInputItemsView(ApiView):
    """The input items a stored response answered, a page at a time."""

    def get(self, request, response_id):
        try:
            key = _authenticated_key(request)
            page = input_items_page(key.pk, response_id, request.GET)
        except RouterError as error:
            return router_error_response(error)
        return JsonResponse(page)


class ModelsView(ApiView):
    """The models, in a list both SDKs read: OpenAI's fields and Anthropic's side by side."""

    def get(self, request):
        try:
            _authenticated_key(request)
            config = _config()
        except RouterError as error:
            return router_error_response(error)
        created = int(time.time())
        ids = [config.routing.auto_model, *(m.id for m in config.models)]
        data = [_model_object(config, model_id, created) for model_id in ids]
        return JsonResponse(
            {
                "object": "list",
                "data": data,
                # Anthropic's list fields: its SDK pages with them.
                "has_more": False,
                "first_id": data[0]["id"],
                "last_id": data[-1]["id"],
            }
        )


class ModelView(ApiView):
    """GET /v1/models/{id}: what the SDKs' ``models.retrieve`` calls."""

    def get(self, request, model_id):
        try:
            _authenticated_key(request)
            config = _config()
            found = _model_object(config, model_id, int(time.time()))
            if found is None:
                raise unknown_model_error(config, model_id)
        except RouterError as error:
            return router_error_response(error)
        return JsonResponse(found)


def unknown_endpoint(request, rest=""):
    """Any other path under /v1: a JSON 404 naming what is served, in the client's shape."""
    from routing.urls import served_endpoints

    served = ", ".join(served_endpoints())
    message = (
        f"This router does not serve {request.method} {request.path}. "
        f"It serves: {served}. See the README's 'The API'."
    )
    if request.path.startswith(MESSAGES_PATH):
        # /v1/messages/batches and the like: Claude Code reads Anthropic's shape.
        return anthropic_error_response(404, message)
    return router_error_response(RouterError(404, message, "unknown_endpoint"))
