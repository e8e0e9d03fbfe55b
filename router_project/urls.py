"""URL map: the OpenAI-compatible API, metrics, the dashboard and Django admin."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("v1/", include("routing.urls")),
    path("", include("metrics.urls")),
    path("admin/", admin.site.urls),
]
