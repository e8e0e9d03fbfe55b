from django.apps import AppConfig


class RoutingConfig(AppConfig):
    name = "routing"
    verbose_name = "Routing"

    def ready(self):
        from routing.config import checks  # noqa: F401  (registers the config check)
