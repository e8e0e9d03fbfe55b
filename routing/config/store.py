"""The effective configuration for this request: the file plus admin overrides.

Where a provider key is sent is decided by the config file alone: an override
of ``providers.*`` (base_url, api_key_env, ...) or of the relevance embedder's
endpoint would let whoever can edit overrides send any environment variable of
the router to a server of their choosing. Such keys are refused when saved and
ignored (logged) if a row for one is found in the database. Every saved change
leaves an admin log entry: who, which key, before and after.

The admin rows (overrides, registered models) are cached per process behind
the change counter (routing/changes.py): a request reads them from the
database only when the counter moved or the cache is older than
``changes.CACHE_SECONDS``, so a change saved in admin takes effect on the next
request in every worker, with no restart. When the database cannot be read,
the last rows read are used (logged); a worker that never read them fails.
"""

import json
import logging
import time
from pathlib import Path

from django.conf import settings
from django.db import Error as DatabaseFailure
from django.db import transaction

from routing import changes
from routing.config.schema import ConfigError, RouterConfig, validate_config
from routing.config.source import DEFAULT_CONFIG_PATH, ConfigSource, apply_overrides
from routing.errors import database_unavailable_error
from routing.models import ConfigOverride, RegisteredModel
from routing.registry import Registry

log = logging.getLogger(__name__)

# Config keys that decide where a provider key goes: the file's, never an override's.
FILE_ONLY_KEYS = ("providers", "pinch.relevance.base_url", "pinch.relevance.api_key_env")

_sources: Registry[ConfigSource] = Registry()
# (counter version, monotonic time read, overrides, models), or None
_rows = None


def config_path() -> Path:
    return Path(settings.ROUTER_CONFIG) if settings.ROUTER_CONFIG else DEFAULT_CONFIG_PATH


def config_source() -> ConfigSource:
    # Found by the setting's text: a Path built for the lookup cost more than the lookup.
    return _sources.get(settings.ROUTER_CONFIG, lambda: ConfigSource(config_path()))


def check_config_file() -> RouterConfig:
    """Validate the config file alone (no database); raises ConfigError naming the key."""
    return validate_config(config_source().data())


def is_file_only(key: str) -> bool:
    """True for a file-only key, a key under one, or a key above one (``pinch`` holds relevance)."""
    return any(
        key == protected or key.startswith(protected + ".") or protected.startswith(key + ".")
        for protected in FILE_ONLY_KEYS
    )


def stored_overrides() -> dict:
    return dict(ConfigOverride.objects.values_list("key", "value"))


def _applicable(overrides: dict) -> dict:
    ignored = sorted(key for key in overrides if is_file_only(key))
    if not ignored:
        return overrides
    log.warning("config_override_ignored keys=%s reason=file_only", ",".join(ignored))
    return {key: value for key, value in overrides.items() if key not in ignored}


def stored_models() -> list[dict]:
    return [m.as_config() for m in RegisteredModel.objects.all()]


def _admin_rows() -> tuple[dict, list[dict]]:
    global _rows
    cached = _rows
    # The counter is read before the rows: a change landing in between leaves
    # a newer counter behind, so the next request reads the rows again.
    current = changes.version()
    if cached is not None and changes.fresh(cached[0], cached[1], current):
        return cached[2], cached[3]
    try:
        overrides, models = _applicable(stored_overrides()), stored_models()
    except DatabaseFailure as error:
        if cached is None:
            raise
        log.warning("config_overrides_unavailable using=cached reason=%s", type(error).__name__)
        return cached[2], cached[3]
    _rows = (current, time.monotonic(), overrides, models)
    return overrides, models


def forget_cached_config() -> None:
    """Drop this process's cached admin rows (the next request reads them)."""
    global _rows
    _rows = None


def current_config() -> RouterConfig:
    return config_source().effective(*_admin_rows())


def api_config() -> RouterConfig:
    """current_config for an API request: a database it cannot read is a RouterError (503)."""
    try:
        return current_config()
    except DatabaseFailure:
        raise database_unavailable_error("the configuration cannot be read") from None


def check_overrides(overrides: dict, models: list[dict] | None = None) -> RouterConfig:
    """Validate a would-be set of overrides against the file; raises ConfigError."""
    data = config_source().data()
    if models is None:
        models = stored_models()
    return validate_config(apply_overrides(data, _applicable(overrides), models))


def _refuse_file_only(changes: dict) -> None:
    refused = sorted(key for key in changes if is_file_only(key))
    if refused:
        raise ConfigError(
            f"{', '.join(refused)}: provider settings (where a key is sent) come from the "
            "config file only and cannot be overridden"
        )


def _value_at(data: dict, dotted_key: str):
    node = data
    for part in dotted_key.split("."):
        if not isinstance(node, dict) or part not in node:
            return "(default)"
        node = node[part]
    return node


def set_overrides(changes: dict, removals=(), actor=None) -> RouterConfig:
    """Save admin overrides after validating the whole result; nothing is saved if invalid.

    ``actor`` (a user) gets an admin log entry per key changed, with the value
    before (the override's, or the file's) and after.
    """
    _refuse_file_only(changes)
    removals = list(removals)
    with transaction.atomic():
        stored = stored_overrides()
        merged = {**stored, **changes}
        for key in removals:
            merged.pop(key, None)
        config = check_overrides(merged)
        file_data = config_source().data()
        for key, value in changes.items():
            ConfigOverride.objects.update_or_create(key=key, defaults={"value": value})
        ConfigOverride.objects.filter(key__in=removals).delete()
        if actor is not None:
            for key in [*changes, *(key for key in removals if key in stored)]:
                _log_change(actor, key, stored, file_data, changes)
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


def _log_change(actor, key: str, stored: dict, file_data: dict, changes: dict) -> None:
    from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
    from django.contrib.contenttypes.models import ContentType

    before = stored[key] if key in stored else _value_at(file_data, key)
    if key in changes:
        after, flag = changes[key], CHANGE if key in stored else ADDITION
    else:
        after, flag = _value_at(file_data, key), DELETION
    row = ConfigOverride.objects.filter(key=key).first()
    LogEntry.objects.create(
        user_id=actor.pk,
        content_type=ContentType.objects.get_for_model(ConfigOverride),
        object_id=str(row.pk) if row else None,
        object_repr=key[:200],
        action_flag=flag,
        change_message=f"{key}: {json.dumps(before)} -> {json.dumps(after)}",
    )
