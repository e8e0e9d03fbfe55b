"""Any other path under /v1: a JSON 404 naming what is served, in the client's error shape.

An SDK calling an endpoint the router does not serve learns which it does;
the list is read from the URL patterns (routing.urls.served_endpoints), so
it stays true. Claude Code reads Anthropic's shape under /v1/messages.
"""

from django.views.decorators.csrf import csrf_exempt

from routing.errors import MESSAGES_PATH, RouterError
from routing.protocols.chat.errors import router_error_response
from routing.protocols.messages.errors import anthropic_error_response
from routing.urls import served_endpoints


@csrf_exempt
def unknown_endpoint(request, rest=""):
    served = ", ".join(served_endpoints())
    message = (
        f"This router does not serve {request.method} {request.path}. "
        f"It serves: {served}. See the README's 'The API'."
    )
    if request.path.startswith(MESSAGES_PATH):
        # /v1/messages/batches and the like: Claude Code reads Anthropic's shape.
        return anthropic_error_response(404, message)
    return router_error_response(RouterError(404, message, "unknown_endpoint"))
