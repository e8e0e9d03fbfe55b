"""Anthropic errors in the OpenAI error shape, with their status.

Anthropic answers ``{"type": "error", "error": {"type", "message"}}``; chat
clients read ``{"error": {"message", "type", "param", "code"}}``. The status
is kept (529 included: the OpenAI SDK treats any 5xx as a server error and
retries it), the Anthropic type becomes the ``code`` so nothing is lost.
"""

from __future__ import annotations

# Anthropic error type -> the OpenAI error type clients branch on.
OPENAI_TYPES = {
    "invalid_request_error": "invalid_request_error",
    "authentication_error": "authentication_error",
    "permission_error": "permission_error",
    "not_found_error": "not_found_error",
    "request_too_large": "invalid_request_error",
    "rate_limit_error": "rate_limit_error",
    "billing_error": "insufficient_quota",
    "api_error": "server_error",
    "overloaded_error": "server_error",
}


# Anthropic error type -> its HTTP status, for an error that came as a stream event.
STATUSES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


class StreamError(Exception):
    """An ``error`` event arrived in the middle of a stream."""

    def __init__(self, error_type: str, message: str):
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.message = message


def error_parts(body) -> tuple[str, str]:
    """(type, message) of an Anthropic error body, or of anything else it sent."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("type") or "api_error"), str(error.get("message") or "")
    return "api_error", ""


def openai_error_body(error_type: str, message: str, param: str | None = None) -> dict:
    return {
        "error": {
            "message": message,
            "type": OPENAI_TYPES.get(error_type, "api_error"),
            "param": param,
            "code": error_type,
        }
    }
