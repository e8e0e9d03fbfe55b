"""The API under /v1/: OpenAI chat completions and Responses, the Anthropic Messages API,
the models; anything else under /v1/ answers a JSON 404."""

import re

from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt

from routing.views import (
    ChatCompletionsView,
    CountTokensView,
    MessagesView,
    ModelsView,
    ModelView,
    ResponseInputItemsView,
    ResponsesView,
    ResponseView,
    unknown_endpoint,
)

urlpatterns = [
    path("chat/completions", ChatCompletionsView.as_view(), name="chat-completions"),
    path("messages", MessagesView.as_view(), name="messages"),
    path("messages/count_tokens", CountTokensView.as_view(), name="messages-count-tokens"),
    path("responses", ResponsesView.as_view(), name="responses"),
    path("responses/<str:response_id>", ResponseView.as_view(), name="response"),
    path(
        "responses/<str:response_id>/input_items",
        ResponseInputItemsView.as_view(),
        name="response-input-items",
    ),
    path("models", ModelsView.as_view(), name="models"),
    path("models/<path:model_id>", ModelView.as_view(), name="model"),
    # Last: every other path, whatever the method (no CSRF: API clients send no cookie).
    re_path(r"^(?P<rest>.*)$", csrf_exempt(unknown_endpoint), name="unknown-endpoint"),
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
