"""The API under /v1/: OpenAI chat completions and Responses, the Anthropic Messages API,
the models. Anything else under /v1/ answers a JSON 404 (routing.unknown_endpoint, mounted
after these in router_project/urls.py)."""

import re

from django.urls import path

from routing.protocols.chat.wire import CHAT
from routing.protocols.messages.wire import MESSAGES
from routing.protocols.responses.wire import RESPONSES
from routing.views import (
    CompletionView,
    CountTokensView,
    ModelsView,
    ModelView,
    ResponseInputItemsView,
    ResponseView,
)

urlpatterns = [
    path("chat/completions", CompletionView.as_view(protocol=CHAT), name="chat-completions"),
    path("messages", CompletionView.as_view(protocol=MESSAGES), name="messages"),
    path("messages/count_tokens", CountTokensView.as_view(), name="messages-count-tokens"),
    path("responses", CompletionView.as_view(protocol=RESPONSES), name="responses"),
    path("responses/<str:response_id>", ResponseView.as_view(), name="response"),
    path(
        "responses/<str:response_id>/input_items",
        ResponseInputItemsView.as_view(),
        name="response-input-items",
    ),
    path("models", ModelsView.as_view(), name="models"),
    path("models/<path:model_id>", ModelView.as_view(), name="model"),
]


def served_endpoints() -> list[str]:
    """``POST /v1/chat/completions``, ... read from the patterns above, so the list stays true."""
    served = []
    for pattern in urlpatterns:
        view = getattr(pattern.callback, "view_class", None)  # set by every as_view()
        if view is None:
            continue
        route = "/v1/" + re.sub(r"<(?:\w+:)?\w+>", "{id}", str(pattern.pattern))
        methods = [m.upper() for m in view.http_method_names if m != "options" and hasattr(view, m)]
        served += [f"{method} {route}" for method in methods]
    return served
