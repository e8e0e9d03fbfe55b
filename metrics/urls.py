"""/metrics and the dashboard, mounted at the site root."""

from django.urls import path

from metrics import views
from metrics.views_dashboard import dashboard

urlpatterns = [
    path("metrics", views.metrics, name="metrics"),
    path("metrics/prometheus", views.prometheus, name="metrics-prometheus"),
    path("dashboard/", dashboard, name="dashboard"),
]
