"""Typed readers for environment variables.

Settings come from the environment (twelve-factor style). A malformed value
must stop the process at start-up with the variable named, not surface later
as a confusing runtime error, so every reader raises ImproperlyConfigured.
"""

import os
from urllib.parse import unquote, urlsplit

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


def database_from_url(url, default_sqlite_path):
    """Django DATABASES['default'] from a DATABASE_URL (sqlite:/// or postgres://)."""
    if not url:
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(default_sqlite_path)}
    parts = urlsplit(url)
    if parts.scheme in ("sqlite", "sqlite3"):
        # sqlite:////abs/path.db -> /abs/path.db ; sqlite:///rel.db -> rel.db
        path = parts.path[1:] if parts.path.startswith("//") else parts.path.lstrip("/")
        if not path:
            raise ImproperlyConfigured("DATABASE_URL sqlite:/// needs a file path")
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": path}
    if parts.scheme in ("postgres", "postgresql", "pgsql"):
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")) or "postgres",
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    raise ImproperlyConfigured(
        f"DATABASE_URL scheme {parts.scheme!r} is not supported (use sqlite:/// or postgres://)"
    )
