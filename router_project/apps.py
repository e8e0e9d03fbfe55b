"""The admin app with the router's site (``router_project.admin_site``) as ``admin.site``."""

from django.contrib.admin.apps import AdminConfig


class RouterAdminConfig(AdminConfig):
    default_site = "router_project.admin_site.RouterAdminSite"
