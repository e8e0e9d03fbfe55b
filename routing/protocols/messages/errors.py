"""Anthropic's error shape, ``{"type": "error", "error": {"type", "message"}}``, with its status.

Claude Code reads it on every /v1/messages path. One table names the error
types and their statuses (docs.anthropic.com "Errors"); the router's
refusals, its failure answers and the Anthropic provider's errors all read it.
"""

from django.http import JsonResponse

from routing.errors import Failure, RouterError, final_headers
from routing.protocols.base import named_sse

# Anthropic error type -> its HTTP status.
TYPE_STATUSES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
# status -> the type clients expect for it (the table read backwards; 422 is a bad request).
STATUS_TYPES = {status: kind for kind, status in TYPE_STATUSES.items()} | {
    422: "invalid_request_error"
}


def error_type_for(status: int) -> str:
    return STATUS_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def anthropic_error_body(status: int, message: str, error_type: str | None = None) -> dict:
    return {
        "type": "error",
        "error": {"type": error_type or error_type_for(status), "message": message},
    }


def anthropic_error_response(
    status: int, message: str, error_type: str | None = None, headers=None, can_wait=None
):
    """The error answer; final ones say so (routing.errors.final_headers)."""
    response = JsonResponse(anthropic_error_body(status, message, error_type), status=status)
    for name, value in final_headers(status, headers or {}, can_wait).items():
        response[name] = value
    return response


def router_error_response(error: RouterError):
    status, error_type = error.as_anthropic()
    return anthropic_error_response(status, error.message, error_type, error.headers)


def failure_response(failure: Failure):
    """Every try failed: same status, message and Retry-After as the OpenAI shape would say.

    A relayed upstream error keeps its message, and its Anthropic type when it
    names one (the Anthropic provider keeps the upstream's type as the ``code``).
    """
    message, error_type = failure.message, None
    detail = failure.relayed.get("error") if isinstance(failure.relayed, dict) else None
    if isinstance(detail, dict):
        message = str(detail.get("message") or "")
        error_type = next(
            (t for t in (detail.get("code"), detail.get("type")) if t in TYPE_STATUSES), None
        )
    return anthropic_error_response(
        failure.status, message, error_type, failure.headers(), can_wait=True
    )


def stream_error_event(status: int, message: str) -> bytes:
    return named_sse(anthropic_error_body(status, message)) + b"\n\n"
