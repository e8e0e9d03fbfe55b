"""The router's admin site is Django's admin.site: the models, the controls and the snapshot."""

from django.contrib import admin

from router_project.admin_site import RouterAdminSite
from routing.models import RouteDecision


def test_admin_site_is_the_router_site_with_the_decision_log_registered():
    assert isinstance(
        admin.site._wrapped if hasattr(admin.site, "_wrapped") else admin.site, RouterAdminSite
    )
    assert admin.site.is_registered(RouteDecision)


def test_the_admin_index_links_the_controls_without_a_sidebar(admin_client, default_config):
    response = admin_client.get("/admin/")

    assert response.status_code == 200
    assert b'id="controls-link"' in response.content
    assert b'id="nav-sidebar"' not in response.content
