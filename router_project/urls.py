"""URL map: the OpenAI-compatible API, metrics, the dashboard and Django admin."""

from django.contrib import admin
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt

from routing.base_url import API_PATHS, wrong_base_url
from routing.views import unknown_endpoint

urlpatterns = [
    # A base URL with /v1 twice, or without it: a JSON 404 naming the one to set.
    re_path(rf"^v1/v1/(?P<rest>{API_PATHS})$", wrong_base_url),
    re_path(rf"^(?P<rest>{API_PATHS})$", wrong_base_url),
    path("v1/", include("routing.urls")),
    path("v1", csrf_exempt(unknown_endpoint)),
    path("", include("metrics.urls")),
    path("admin/", admin.site.urls),
]

# A crash under /v1 answers JSON in the OpenAI shape (routing.errors.server_error), and so
# does a request Django refuses before any view, e.g. a Host not in ALLOWED_HOSTS.
handler500 = "routing.errors.server_error"
handler400 = "routing.errors.bad_request"
