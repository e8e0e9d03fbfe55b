from django.apps import AppConfig


class RoutingConfig(AppConfig):
    name = "routing"
    verbose_name = "Routing"

    def ready(self):
        from django.db.models.signals import post_delete, post_save

        from routing.config import checks  # noqa: F401  (registers the config check)
        from routing.models import ApiKey, ConfigOverride, RegisteredModel

        # Every worker caches these (routing/changes.py): a saved change moves the counter.
        for model in (ConfigOverride, RegisteredModel, ApiKey):
            post_save.connect(_changed, sender=model, dispatch_uid=f"changes-{model.__name__}")
            post_delete.connect(_changed, sender=model, dispatch_uid=f"changes-{model.__name__}-d")


def _changed(sender, **kwargs):
    from routing import changes

    changes.bump()
