"""The Anthropic upstream's errors in the OpenAI error shape, with their status.

Anthropic answers ``{"type": "error", "error": {"type", "message"}}``; chat
clients read ``{"error": {"message", "type", "param", "code"}}``. The status
is kept (529 included: the OpenAI SDK treats any 5xx as a server error and
retries it), the Anthropic type becomes the ``code`` so nothing is lost.
"""

from routing.protocols.messages.errors import TYPE_STATUSES

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
    "timeout_error": "timeout_error",
}


def stream_error_status(error_type: str) -> int:
    """The HTTP status of an error that came as a stream event (the one Anthropic table)."""
    return TYPE_STATUSES.get(error_type, 500)


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
