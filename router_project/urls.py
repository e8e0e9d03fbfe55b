"""URL map: the OpenAI-compatible API, metrics, the dashboard and Django admin."""

from django.contrib import admin
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt

from router_project.views import home
from routing.views import unknown_endpoint

urlpatterns = [
    path("v1/", include("routing.urls")),
    path("v1", csrf_exempt(unknown_endpoint)),
    path("", include("metrics.urls")),
    path("admin/", admin.site.urls),
    path("", home, name="home"),
]

# A crash under /v1 answers JSON in the OpenAI shape (routing.errors.server_error), and so
# does a request Django refuses before any view, e.g. a Host not in ALLOWED_HOSTS.
handler500 = "routing.errors.server_error"
handler400 = "routing.errors.bad_request"
