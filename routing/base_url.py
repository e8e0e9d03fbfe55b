"""A completion path asked for under the wrong base URL: a JSON 404 that names the right one.

Claude Code wants its base URL without ``/v1`` (it adds ``/v1/messages``),
OpenAI clients and Codex with it (they add ``/chat/completions``,
``/responses``): an easy slip either way. ``POST /chat/completions`` (the
``/v1`` left out) and ``POST /v1/v1/messages`` (put in twice) are not served
under a second name, so that one URL means one endpoint in logs and docs;
they answer a 404 in the client's error shape that says which base URL to set.
"""

from django.views.decorators.csrf import csrf_exempt

from routing.errors import RouterError
from routing.protocols.chat.errors import router_error_response
from routing.protocols.messages.errors import anthropic_error_response

# The API's paths without their /v1 (what a base URL missing it makes a client ask for).
API_PATHS = (
    r"(?:chat/completions|completions|embeddings"
    r"|messages(?:/.*)?|responses(?:/.*)?|models(?:/.*)?)"
)


@csrf_exempt
def wrong_base_url(request, rest: str):
    """The JSON 404 for ``/<rest>`` or ``/v1/v1/<rest>``; ``rest`` has no /v1."""
    root = request.build_absolute_uri("/").rstrip("/")
    message = (
        f"This router serves {request.method} /v1/{rest}, not {request.path}: the client's base "
        f"URL is wrong. Set it to {root}/v1 for OpenAI clients and Codex (base_url), or to "
        f"{root} for Claude Code (ANTHROPIC_BASE_URL, without /v1)."
    )
    if rest.startswith("messages"):
        return anthropic_error_response(404, message)
    return router_error_response(RouterError(404, message, "wrong_base_url"))
