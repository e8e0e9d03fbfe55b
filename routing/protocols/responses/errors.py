"""The Responses API's errors: OpenAI's shape over HTTP, an event once the stream has started.

Before the stream starts a refusal or a failure is an HTTP status in
OpenAI's error shape (routing.protocols.chat.errors, which the Responses API
shares); after, a translated stream ends with ``response.failed`` (its
translator makes it) and a native one with an ``error`` event numbered after
the last event relayed.
"""

from routing.errors import ProviderError, RouterError
from routing.protocols.base import named_sse
from routing.protocols.chat import errors as chat_errors
from routing.protocols.chat.errors import error_body


def router_error_response(error: RouterError):
    """A refusal before the stream, at a status Codex CLI takes as final when it is (a wrong
    router key: 400, not the 401 it retries; routing.errors.AGENT_RETRIED_FINALS)."""
    return chat_errors.router_error_response(error, "responses")


def stream_code(status: int) -> str:
    return "upstream_timeout" if status == 504 else "upstream_stream_broken"


def error_event(sequence_number: int, status: int, message: str) -> bytes:
    event = {
        "type": "error",
        "sequence_number": sequence_number,
        "code": stream_code(status),
        "message": message,
        "param": None,
    }
    return named_sse(event) + b"\n\n"


def unsupported_tool_error(message: str) -> ProviderError:
    """A fallback candidate that cannot take what the first one could: a 400, not retried."""
    return ProviderError("status", message, 400, error_body(400, message, "unsupported_tool"))
