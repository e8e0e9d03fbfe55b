"""Typed readers for environment variables.

Settings come from the environment (twelve-factor style). A malformed value
must stop the process at start-up with the variable named, not surface later
as a confusing runtime error, so every reader raises ImproperlyConfigured.
"""

import os

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name, default=""):
    return os.environ.get(name, default)


def env_bool(name, default=False):
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_int(name, default):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None


def env_list(name, default):
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


# The engines the router is built and tested on; dj-database-url knows more.
SUPPORTED_ENGINES = ("django.db.backends.sqlite3", "django.db.backends.postgresql")


def database_from_url(url, default_sqlite_path):
    """Django DATABASES['default'] from a DATABASE_URL (sqlite:/// or postgres://).

    Parsed by dj-database-url; persistent, health-checked connections for
    PostgreSQL, since opening one per request is a measurable share of a hop.
    """
    if not url:
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(default_sqlite_path)}
    try:
        database = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    except (ValueError, dj_database_url.UnknownSchemeError) as error:
        raise ImproperlyConfigured(f"DATABASE_URL cannot be read: {error}") from None
    if database["ENGINE"] not in SUPPORTED_ENGINES:
        raise ImproperlyConfigured(
            f"DATABASE_URL {database['ENGINE']!r} is not supported (use sqlite:/// or postgres://)"
        )
    # In memory, every connection (thread) would see a database of its own, empty.
    if database["ENGINE"].endswith("sqlite3") and database["NAME"] in ("", ":memory:"):
        raise ImproperlyConfigured("DATABASE_URL sqlite:/// needs a file path")
    return database
