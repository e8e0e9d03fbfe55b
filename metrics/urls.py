"""Metrics, the admin snapshot API and the dashboard, mounted at the site root."""

from django.urls import path

from metrics import views
from metrics.views_dashboard import dashboard, home

urlpatterns = [
    path("metrics", views.metrics, name="metrics"),
    path("metrics/prometheus", views.prometheus, name="metrics-prometheus"),
    # router_project/urls.py includes this module before admin.site.urls, so this
    # path wins over admin's own URLs; keep that order.
    path("admin/api/snapshot", views.admin_snapshot, name="admin-snapshot"),
    path("dashboard/", dashboard, name="dashboard"),
    path("", home, name="home"),
]
