"""The router's admin site: Django's own, plus the controls page and the snapshot API.

A subclass rather than a patched ``admin.site.get_urls``: INSTALLED_APPS names
``router_project.apps.RouterAdminConfig``, whose ``default_site`` is this class,
so ``admin.site`` and every ``@admin.register`` in ``routing.admin`` use it.

- ``controls/`` (``admin:controls``): behind ``admin_view``, so it has the same
  staff check, login redirect and CSRF/no-cache handling as every admin page.
- ``api/snapshot`` (``admin:snapshot``): JSON for the TUI; a staff session or a
  staff router key, and a 403 in the OpenAI shape otherwise (never a redirect
  to a login form, which a terminal client could not follow).
"""

from django.contrib import admin
from django.urls import path


class RouterAdminSite(admin.AdminSite):
    site_header = "LLM router administration"
    site_title = "LLM router admin"
    # The app list in a sidebar takes 300 px of every page: the decision log needs
    # them to show its columns at 1400 px without scrolling. The index lists the apps.
    enable_nav_sidebar = False

    def get_urls(self):
        # Imported here: these views import models, which are not ready when
        # INSTALLED_APPS loads this module.
        from router_project.snapshot import snapshot_view
        from routing.admin.controls import controls_view

        return [
            path("controls/", self.admin_view(controls_view), name="controls"),
            path("api/snapshot", snapshot_view, name="snapshot"),
            *super().get_urls(),
        ]
