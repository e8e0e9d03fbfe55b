"""The last resort: a failure no view answered still leaves in JSON, in the client's shape.

Clients (the official SDKs, agents) read the message and branch on the
status, so every failure of the API, whether raised by the router, by DRF or
by Django before any view, leaves through here with the right status: the
Messages API's paths in Anthropic's shape, every other API path in OpenAI's
(routing.protocols.*.errors), never Django's HTML page.
"""

import logging

from django.core.exceptions import DisallowedHost
from django.db import Error as DatabaseFailure
from django.views.defaults import bad_request as html_bad_request
from django.views.defaults import server_error as html_server_error
from rest_framework import exceptions as drf_exceptions

from routing.config import ConfigError
from routing.errors import (
    API_PATH_PREFIXES,
    MESSAGES_PATH,
    OPERATOR_FIX_STATUS,
    RouterError,
    database_unavailable_error,
)
from routing.protocols.chat.errors import error_response, router_error_response
from routing.protocols.messages.errors import router_error_response as anthropic_error_response

log = logging.getLogger(__name__)

INTERNAL_ERROR = RouterError(
    500, "The router failed on this request; the server log has the details.", "internal_error"
)


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


class ApiErrorMiddleware:
    """An exception no view handled answers in JSON, in the client's shape.

    A config file broken while the router runs answers naming the key, on
    every path, with the final OPERATOR_FIX_STATUS: a retry cannot mend it. On
    the API paths, a database that cannot be reached answers 503 and anything
    else 500, with the traceback in the log.
    """

    # Its work is process_exception, which Django's handler calls around the view: the layer
    # itself only hands a request on, so the API's chain goes without it (router_project.api_front).
    passes_api_by = True

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        error = self._error(request, exception)
        if error is None:
            return None
        if request.path.startswith(MESSAGES_PATH):
            return anthropic_error_response(error)  # Claude Code reads Anthropic's shape
        return router_error_response(error)

    def _error(self, request, exception) -> RouterError | None:
        if isinstance(exception, ConfigError):
            message = f"The router's configuration is invalid: {exception}"
            # The cause in the server log too, not only Django's "Internal Server Error".
            log.error("config_invalid path=%s: %s", request.path, exception)
            return RouterError(OPERATOR_FIX_STATUS, message, "bad_config")
        if not request.path.startswith(API_PATH_PREFIXES):
            return None
        log.error("unhandled_error path=%s", request.path, exc_info=exception)
        if isinstance(exception, DatabaseFailure):
            return database_unavailable_error(type(exception).__name__)
        return INTERNAL_ERROR


def server_error(request, *args, **kwargs):
    """handler500: JSON on the API paths (an error outside any view), Django's page elsewhere."""
    if request.path.startswith(API_PATH_PREFIXES):
        return router_error_response(INTERNAL_ERROR)
    return html_server_error(request, *args, **kwargs)


def bad_request(request, exception):
    """handler400: a request Django refuses before any view (a Host not in ALLOWED_HOSTS, a
    suspicious header) answers in the OpenAI shape on an API path, naming the cause.

    Django's own message names the host and ALLOWED_HOSTS ("Invalid HTTP_HOST
    header: 'x'. You may need to add 'x' to ALLOWED_HOSTS."); the log line is
    kept to that message (settings.LOGGING drops its traceback).
    """
    if not request.path.startswith(API_PATH_PREFIXES):
        return html_bad_request(request, exception)
    if isinstance(exception, DisallowedHost):
        message = (
            f"The request was refused: {exception} ALLOWED_HOSTS is an environment variable "
            "of the router (comma-separated)."
        )
        return error_response(400, message, "disallowed_host")
    return error_response(400, f"The request was refused: {exception}", "bad_request")
