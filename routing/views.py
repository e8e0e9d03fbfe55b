"""The API: POST /v1/chat/completions, POST /v1/messages (+ count_tokens), POST /v1/responses
(+ GET and DELETE /v1/responses/{id}, GET .../input_items), GET /v1/models[/{id}].

Views are thin: authenticate, parse the body with the one schema of its
protocol, call one service (routing.completion for a completion), render.
The three completion endpoints are one view, ``CompletionView``,
parametrised by its client protocol (routing.protocols.base.ClientProtocol:
the parser, the dispatcher's wire, the error shape). Every view
authenticates through one policy, ``ApiView``: the router key is checked
before the handler runs, and any RouterError leaves in the view's
protocol's error shape. The views are plain Django
views: they read the raw body themselves, so DRF's request wrapping, content
negotiation and parsers would be work for nothing on the hot path, and any
``Accept`` is served (Codex CLI asks for ``text/event-stream``).
"""

import time

from django.conf import settings
from django.http import JsonResponse
from django.views import View

from routing import changes
from routing.auth import KeyCheckUnavailable, key_for_request
from routing.completion import complete
from routing.config.store import api_config
from routing.errors import (
    RouterError,
    body_too_large_error,
    database_unavailable_error,
    invalid_key_error,
)
from routing.model_list import model_entry, model_list
from routing.pipeline import plan_request
from routing.protocols.base import ClientProtocol
from routing.protocols.chat.wire import CHAT
from routing.protocols.messages.request import parse_messages_body
from routing.protocols.messages.wire import MESSAGES, count_tokens
from routing.protocols.responses.store import delete_response, input_items_page, stored_response


def authenticated_key(request):
    """The request's router key (an ApiKey), or RouterError: 401; 503 when it cannot be checked."""
    try:
        key = key_for_request(request)
    except KeyCheckUnavailable:
        raise database_unavailable_error("the API key cannot be checked") from None
    if key is None:
        raise invalid_key_error(request.path)
    return key


class ApiView(View):
    """The policy of every API view: a router key first, every refusal in the protocol's shape.

    ``request.api_key`` is the caller's key when the handler runs. A method
    the view does not serve is a 405 before the key is looked at. The
    request sees one state of the keys and the config: the change counter is
    read once for all of it (routing.changes.read_once).
    """

    protocol: ClientProtocol = CHAT

    @classmethod
    def as_view(cls, **initkwargs):
        view = super().as_view(**initkwargs)
        # API clients send no cookie. Marked once here: csrf_exempt through
        # method_decorator wrapped dispatch again on every request.
        view.csrf_exempt = True
        return view

    def dispatch(self, request, *args, **kwargs):
        if request.method.lower() not in self.http_method_names:
            return self.http_method_not_allowed(request)
        try:
            with changes.read_once():
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


class CompletionView(ApiView):
    """A completion endpoint, one for every protocol: parse, then the completion service."""

    http_method_names = ["post"]

    def post(self, request):
        started = time.monotonic()
        planned = self.protocol.parse(_read_body(request), request.META, request.api_key.pk)
        return complete(self.protocol, planned, request.META, request.api_key, started)


class CountTokensView(ApiView):
    """The prompt's input tokens: the Claude upstream's count, else the router's estimate."""

    protocol = MESSAGES
    http_method_names = ["post"]

    def post(self, request):
        raw = _read_body(request)
        planned = parse_messages_body(raw, count_only=True, meta=request.META)
        plan = plan_request(planned, api_config(), request.api_key.pk, measure_prefix=False)
        return JsonResponse(count_tokens(plan, plan.providers[0]))


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
