"""Errors in the client's shape: OpenAI's ``{"error": {"message", "type", "code"}}``, and on
the Messages API (/v1/messages) Anthropic's ``{"type": "error", "error": {"type", "message"}}``.

Clients (the official SDKs, agents) read the message and branch on the
status, so every failure of the API, whether raised by the router, by DRF or
relayed from a provider, leaves through here with the right status.
"""

import json
import logging

from django.db import Error as DatabaseFailure
from django.http import JsonResponse
from rest_framework import exceptions as drf_exceptions

log = logging.getLogger(__name__)

# Paths whose clients are programs: a failure there answers JSON, never an HTML page.
API_PATH_PREFIXES = ("/v1/", "/metrics", "/admin/api/")

# status -> the OpenAI error type clients expect for it
_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    502: "upstream_error",
    503: "upstream_error",
    504: "timeout_error",
}


# Where clients speak the Messages API and read errors in its shape.
MESSAGES_PATH = "/v1/messages"

# status -> the Anthropic error type (docs.anthropic.com "Errors"); others: api_error
ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


# An upstream refusing the router's key for it: answered as 502, since the client's
# own (router) key was accepted; relaying the 401 would read as a bad router key.
PROVIDER_KEY_STATUSES = (401, 403)


def provider_key_refused_message(provider: str, status: int, key_env: str | None, detail: str):
    """A provider's 401/403, naming the provider and the variable its key comes from."""
    said = f": {detail}" if detail else ""
    if key_env:
        fix = f"Set {key_env} to a valid key for {provider!r} and restart the router."
        whose = f"the key in {key_env}"
    else:
        fix = f"Give provider {provider!r} an api_key_env in the router config."
        whose = "the request (the config names no api_key_env for it)"
    return (
        f"Provider {provider!r} refused {whose} (HTTP {status}{said}). "
        f"Your router key was accepted; this is the router's key for the provider. {fix}"
    )


def provider_not_found_message(provider: str, url: str, detail: str):
    """A provider's 404, naming the URL asked and, when it lacks /v1, the likely fix."""
    said = f": {detail}" if detail else ""
    message = f"provider {provider!r} answered HTTP 404 at {url or 'its base_url'}{said}"
    if url and "/v1/" not in url:
        message += (
            ". Its base_url has no /v1: OpenAI-compatible servers serve under /v1 "
            "(e.g. base_url: http://localhost:11434/v1)"
        )
    return message


class RouterError(Exception):
    """A request the router refuses or cannot complete; carries its HTTP status."""

    def __init__(self, status: int, message: str, code: str | None = None, param=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param


def error_body(status: int, message: str, code: str | None = None, param=None) -> dict:
    return {
        "error": {
            "message": message,
            "type": _TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error"),
            "param": param,
            "code": code,
        }
    }


def error_response(status: int, message: str, code: str | None = None, param=None, headers=None):
    response = JsonResponse(error_body(status, message, code, param), status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


# What creates a router key, as README runs it: the system Python has no Django.
CREATE_KEY_COMMAND = ".venv/bin/python manage.py createapikey NAME"


def invalid_key_error(path: str) -> RouterError:
    """The 401 for a missing or unknown router key, in the words of the client's protocol.

    Claude Code (/v1/messages) sends its key as ``x-api-key``, from
    ANTHROPIC_API_KEY; the OpenAI clients send ``Authorization: Bearer``.
    """
    if path.startswith(MESSAGES_PATH):
        how = (
            "Send your router key as 'x-api-key: <router key>' (Claude Code: set "
            "ANTHROPIC_API_KEY to it, and ANTHROPIC_BASE_URL to the router) or as "
            "'Authorization: Bearer <router key>'"
        )
    else:
        how = "Send 'Authorization: Bearer <router key>'"
    return RouterError(
        401,
        f"Missing or invalid API key. {how} (create one with: {CREATE_KEY_COMMAND}).",
        "invalid_api_key",
    )


def body_too_large_error(size: int | None, limit: int) -> RouterError:
    """The 413, naming the setting that raises the limit."""
    what = f"The body is {size:,} bytes" if size is not None else "The body is over the limit"
    return RouterError(
        413,
        f"{what}; the limit is {limit:,} bytes (ROUTER_MAX_BODY_BYTES, an environment "
        "variable of the router).",
        "body_too_large",
    )


def database_unavailable_error(what: str) -> RouterError:
    return RouterError(
        503, f"The router's database is unavailable: {what}. Try again shortly.", "db_unavailable"
    )


def router_error_response(error: RouterError):
    return error_response(error.status, error.message, error.code, error.param)


def anthropic_error_body(status: int, message: str, error_type: str | None = None) -> dict:
    error_type = error_type or ANTHROPIC_TYPES.get(
        status, "api_error" if status >= 500 else "invalid_request_error"
    )
    return {"type": "error", "error": {"type": error_type, "message": message}}


def anthropic_error_response(status: int, message: str, error_type: str | None = None):
    return JsonResponse(anthropic_error_body(status, message, error_type), status=status)


def openai_exception_handler(exc, context):
    """DRF's exception handler, answering in the OpenAI shape."""
    if isinstance(exc, RouterError):
        return router_error_response(exc)
    if isinstance(exc, drf_exceptions.ParseError):
        return error_response(400, f"The body is not valid JSON: {exc.detail}", "invalid_json")
    if isinstance(exc, drf_exceptions.AuthenticationFailed | drf_exceptions.NotAuthenticated):
        return error_response(401, str(exc.detail), "invalid_api_key")
    if isinstance(exc, drf_exceptions.APIException):
        return error_response(exc.status_code, str(exc.detail), exc.default_code)
    return None


def as_anthropic(response):
    """An error response in the OpenAI shape, in Anthropic's: same status, message, Retry-After.

    The type is the Anthropic one the body names (the Anthropic provider keeps
    the upstream's own type as the ``code``), else the status's.
    """
    body = json.loads(response.content)
    detail = body.get("error") if isinstance(body, dict) else None
    detail = detail if isinstance(detail, dict) else {}
    known = set(ANTHROPIC_TYPES.values())
    error_type = next((t for t in (detail.get("code"), detail.get("type")) if t in known), None)
    converted = anthropic_error_response(
        response.status_code, str(detail.get("message") or ""), error_type
    )
    if response.has_header("Retry-After"):
        converted["Retry-After"] = response["Retry-After"]
    return converted


class ApiErrorMiddleware:
    """The last resort: an exception no view handled still answers in JSON, in the client's shape.

    A config file broken while the router runs answers 500 naming the key, on
    every path. On the API paths, a database that cannot be reached answers
    503 and anything else 500, with the traceback in the log, never Django's
    HTML error page.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        response = self._answer(request, exception)
        if response is not None and request.path.startswith(MESSAGES_PATH):
            return as_anthropic(response)  # Claude Code reads Anthropic's shape
        return response

    def _answer(self, request, exception):
        from routing.config import ConfigError

        if isinstance(exception, ConfigError):
            message = f"The router's configuration is invalid: {exception}"
            # The cause in the server log too, not only Django's "Internal Server Error".
            log.error("config_invalid path=%s: %s", request.path, exception)
            return error_response(500, message, "bad_config")
        if not request.path.startswith(API_PATH_PREFIXES):
            return None
        log.error("unhandled_error path=%s", request.path, exc_info=exception)
        if isinstance(exception, DatabaseFailure):
            error = database_unavailable_error(type(exception).__name__)
            return router_error_response(error)
        return internal_error_response()


def internal_error_response():
    message = "The router failed on this request; the server log has the details."
    return error_response(500, message, "internal_error")


def server_error(request, *args, **kwargs):
    """handler500: JSON on the API paths (an error outside any view), Django's page elsewhere."""
    if request.path.startswith(API_PATH_PREFIXES):
        return internal_error_response()
    from django.views.defaults import server_error as html_server_error

    return html_server_error(request, *args, **kwargs)


def bad_request(request, exception):
    """handler400: a request Django refuses before any view (a Host not in ALLOWED_HOSTS, a
    suspicious header) answers in the OpenAI shape on an API path, naming the cause.

    Django's own message names the host and ALLOWED_HOSTS ("Invalid HTTP_HOST
    header: 'x'. You may need to add 'x' to ALLOWED_HOSTS."); the log line is
    kept to that message (settings.LOGGING drops its traceback).
    """
    from django.core.exceptions import DisallowedHost
    from django.views.defaults import bad_request as html_bad_request

    if not request.path.startswith(API_PATH_PREFIXES):
        return html_bad_request(request, exception)
    if isinstance(exception, DisallowedHost):
        message = (
            f"The request was refused: {exception} ALLOWED_HOSTS is an environment variable "
            "of the router (comma-separated)."
        )
        return error_response(400, message, "disallowed_host")
    return error_response(400, f"The request was refused: {exception}", "bad_request")
