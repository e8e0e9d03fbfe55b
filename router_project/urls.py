"""URL map: the OpenAI-compatible API, metrics, the dashboard and Django admin."""

from django.contrib import admin
from django.urls import include, path, re_path

from router_project.views import home
from routing.base_url import API_PATHS, wrong_base_url
from routing.unknown_endpoint import unknown_endpoint

urlpatterns = [
    # A base URL with /v1 twice, or without it: a JSON 404 naming the one to set.
    re_path(rf"^v1/v1/(?P<rest>{API_PATHS})$", wrong_base_url),
    re_path(rf"^(?P<rest>{API_PATHS})$", wrong_base_url),
    path("v1/", include("routing.urls")),
    # Every other path under /v1, whatever the method (no CSRF: API clients send no cookie).
    re_path(r"^v1/(?P<rest>.*)$", unknown_endpoint, name="unknown-endpoint"),
    path("v1", unknown_endpoint),
    path("", include("metrics.urls")),
    path("admin/", admin.site.urls),
    path("", home, name="home"),
]

# A crash under /v1 answers JSON in the OpenAI shape (routing.error_handlers.server_error), and so
# does a request Django refuses before any view, e.g. a Host not in ALLOWED_HOSTS.
handler500 = "routing.error_handlers.server_error"
handler400 = "routing.error_handlers.bad_request"
