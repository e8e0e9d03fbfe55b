"""OpenAI's error shape, ``{"error": {"message", "type", "param", "code"}}``, with its status.

Chat completions and the Responses API answer in it (the official SDKs read
the message and branch on the status), and so does every API path that is
not the Messages API's.
"""

from django.http import HttpResponse, JsonResponse

from routing import jsonio
from routing.errors import Failure, RouterError, answered_status, final_headers

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


def error_body(
    status: int, message: str, code: str | None = None, param=None, error_type=None
) -> dict:
    return {
        "error": {
            "message": message,
            "type": error_type
            or _TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error"),
            "param": param,
            "code": code,
        }
    }


def error_response(
    status: int, message: str, code: str | None = None, param=None, headers=None, error_type=None
):
    """The error answer; final ones say so (routing.errors.final_headers)."""
    response = JsonResponse(error_body(status, message, code, param, error_type), status=status)
    for name, value in final_headers(status, headers or {}).items():
        response[name] = value
    return response


def router_error_response(error: RouterError, protocol: str = "chat"):
    """A refusal, at a status ``protocol``'s agents take as final when it is (its type kept)."""
    status, error_type = error.as_openai()
    answered = answered_status(status, "Retry-After" in error.headers, protocol)
    error_type = error_type or _TYPES.get(status)
    return error_response(
        answered, error.message, error.code, error.param, error.headers, error_type
    )


def failure_response(failure: Failure, protocol: str = "chat"):
    """Every try failed: the upstream's own OpenAI-shaped error relayed, else ours; a final
    status ``protocol``'s agents retry answered as one they take as final (an upstream's 422
    to Codex: a 400)."""
    body = failure.relayed
    if not (isinstance(body, dict) and isinstance(body.get("error"), dict)):
        body = error_body(failure.status, failure.message, failure.code)
    status = answered_status(failure.status, True, protocol)  # an upstream's 429 may lift
    response = HttpResponse(jsonio.dumps(body), status=status, content_type="application/json")
    # Retry-After: the client may wait as the upstream asked (the SDKs honour it).
    for name, value in failure.headers().items():
        response[name] = value
    return response


def stream_error_event(status: int, message: str) -> bytes:
    """A chat stream that broke after it started: an error chunk, the last event."""
    body = error_body(status, message, "upstream_stream_broken")
    return b"data: " + jsonio.dumps(body) + b"\n\n"
