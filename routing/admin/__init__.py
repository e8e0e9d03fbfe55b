"""Django admin for the router: the decision log, sessions, the model registry, API keys, controls.

Every change of router state goes through a named service (``routing.config.store``,
``routing.auth``); these modules only validate forms and call them.
"""

from django.contrib import admin

from routing.admin import controls, decisions, keys, registry, sessions  # noqa: F401  (register)

# The app list in a sidebar takes 300 px of every page: the decision log needs
# them to show its columns at 1400 px without scrolling. The index lists the apps.
admin.site.enable_nav_sidebar = False
