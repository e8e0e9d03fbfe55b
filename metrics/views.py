"""/metrics and /metrics/prometheus.

Plain Django views rather than DRF: /metrics answers in Prometheus text as
well as JSON. Each view checks
access, calls one service and renders; errors leave in the OpenAI shape.
"""

from functools import wraps

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.utils.cache import patch_vary_headers
from django.views.decorators.cache import never_cache

from metrics.permissions import metrics_token_ok, metrics_with_tenant_labels
from metrics.prometheus import exposition
from metrics.report import metrics_report
from routing.config.store import current_config
from routing.protocols.chat.errors import error_response

PROMETHEUS_TYPES = {"text/plain", "application/openmetrics-text"}
JSON_TYPES = {"application/json", "application/*", "*/*"}


def get_only(view):
    """A 405 in the OpenAI shape for anything but GET and HEAD (the JSON endpoints' rule)."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method not in ("GET", "HEAD"):
            return error_response(
                405,
                f"{request.method} is not allowed here; use GET.",
                "method_not_allowed",
                headers={"Allow": "GET, HEAD"},
            )
        return view(request, *args, **kwargs)

    return wrapper


def _metrics_token_required(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not metrics_token_ok(request):
            return error_response(
                401,
                _closed_reason(),
                "invalid_metrics_token",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return view(request, *args, **kwargs)

    return wrapper


def _closed_reason() -> str:
    if settings.METRICS_TOKEN:
        how = "send the router's METRICS_TOKEN as Authorization: Bearer <token>"
    else:
        how = "no METRICS_TOKEN is set and METRICS_PUBLIC is off: set one of them"
    return f"/metrics is closed: {how}, or sign in to /admin/ as a staff user."


def _wants_prometheus(request) -> bool:
    """True when the Accept header prefers Prometheus text (or OpenMetrics) to JSON.

    Django's ``get_preferred_type`` cannot be used: Prometheus asks for
    ``application/openmetrics-text;version=1.0.0``, and a type with parameters
    does not match the bare one. Walk the accepted types, best first, instead.
    """
    for media_type in request.accepted_types:
        name = f"{media_type.main_type}/{media_type.sub_type}".lower()
        if name in PROMETHEUS_TYPES:
            return True
        if name in JSON_TYPES:
            return False
    return False


def _prometheus_response(request):
    body, content_type = exposition(
        current_config(),
        request.headers.get("Accept", ""),
        tenant_labels=metrics_with_tenant_labels(),
    )
    return HttpResponse(body, content_type=content_type)


@never_cache
@get_only
@_metrics_token_required
def metrics(request):
    """JSON by default; Prometheus text for ``Accept: text/plain`` or OpenMetrics."""
    if _wants_prometheus(request):
        response = _prometheus_response(request)
    else:
        response = JsonResponse(metrics_report(current_config()))
    patch_vary_headers(response, ["Accept"])
    return response


@never_cache
@get_only
@_metrics_token_required
def prometheus(request):
    return _prometheus_response(request)
