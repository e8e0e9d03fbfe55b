"""The OpenAI-compatible API under /v1/."""

from django.urls import path

from routing.views import ChatCompletionsView, ModelsView

urlpatterns = [
    path("chat/completions", ChatCompletionsView.as_view(), name="chat-completions"),
    path("models", ModelsView.as_view(), name="models"),
]
