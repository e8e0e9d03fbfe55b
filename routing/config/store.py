"""The effective configuration for this request: the file plus admin overrides.

Read on every request (two small queries), so a change saved in admin takes
effect on the next request in every worker, with no restart and no cache to
invalidate across processes.
"""

import threading
from pathlib import Path

from django.conf import settings
from django.db import transaction

from routing.config.schema import RouterConfig, validate_config
from routing.config.source import DEFAULT_CONFIG_PATH, ConfigSource, apply_overrides
from routing.models import ConfigOverride, RegisteredModel

_source_lock = threading.Lock()
_sources: dict[Path, ConfigSource] = {}


def config_path() -> Path:
    return Path(settings.ROUTER_CONFIG) if settings.ROUTER_CONFIG else DEFAULT_CONFIG_PATH


def config_source() -> ConfigSource:
    path = config_path()
    with _source_lock:
        source = _sources.get(path)
        if source is None:
            source = _sources[path] = ConfigSource(path)
        return source


def check_config_file() -> RouterConfig:
    """Validate the config file alone (no database); raises ConfigError naming the key."""
    return validate_config(config_source().data())


def stored_overrides() -> dict:
    return dict(ConfigOverride.objects.values_list("key", "value"))


def stored_models() -> list[dict]:
    return [m.as_config() for m in RegisteredModel.objects.all()]


def current_config() -> RouterConfig:
    return config_source().effective(stored_overrides(), stored_models())


def check_overrides(overrides: dict, models: list[dict] | None = None) -> RouterConfig:
    """Validate a would-be set of overrides against the file; raises ConfigError."""
    data = config_source().data()
    if models is None:
        models = stored_models()
    return validate_config(apply_overrides(data, overrides, models))


def set_overrides(changes: dict, removals=()) -> RouterConfig:
    """Save admin overrides after validating the whole result; nothing is saved if invalid."""
    with transaction.atomic():
        merged = stored_overrides()
        merged.update(changes)
        for key in removals:
            merged.pop(key, None)
        config = check_overrides(merged)
        for key, value in changes.items():
            ConfigOverride.objects.update_or_create(key=key, defaults={"value": value})
        ConfigOverride.objects.filter(key__in=list(removals)).delete()
    return config


def save_registered_model(model: RegisteredModel) -> RouterConfig:
    """Add or change a model of the registry, if the effective config stays valid."""
    with transaction.atomic():
        others = (
            RegisteredModel.objects.exclude(pk=model.pk) if model.pk else RegisteredModel.objects
        )
        config = check_overrides(
            stored_overrides(), [m.as_config() for m in others.all()] + [model.as_config()]
        )
        model.save()
    return config


def check_deletion(queryset) -> RouterConfig:
    """The effective config without these registry models; raises ConfigError if invalid.

    A model still named elsewhere in the config (``classifier.llm.model``) cannot
    go: the ConfigError says where it is used.
    """
    remaining = RegisteredModel.objects.exclude(pk__in=queryset.values("pk"))
    return check_overrides(stored_overrides(), [m.as_config() for m in remaining])


def delete_registered_models(queryset) -> int:
    """Remove models from the registry, if the effective config stays valid without them."""
    with transaction.atomic():
        check_deletion(queryset)
        deleted, _ = RegisteredModel.objects.filter(pk__in=queryset.values("pk")).delete()
    return deleted
