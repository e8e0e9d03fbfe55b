"""Settings from the environment: DATABASE_URL and gunicorn's variables fail naming themselves."""

import runpy
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from router_project.env import database_from_url

GUNICORN_CONF = Path(__file__).resolve().parents[2] / "router_project" / "gunicorn.conf.py"


@pytest.mark.parametrize(
    "url, engine, name",
    [
        ("", "django.db.backends.sqlite3", "default.sqlite3"),
        ("sqlite:///relative.db", "django.db.backends.sqlite3", "relative.db"),
        (
            "sqlite:////srv/router/db.sqlite3",
            "django.db.backends.sqlite3",
            "/srv/router/db.sqlite3",
        ),
        (
            "postgres://router:s%40cret@db.internal:5433/routes",
            "django.db.backends.postgresql",
            "routes",
        ),
    ],
)
def test_database_url_names_the_engine_and_database(url, engine, name):
    database = database_from_url(url, "default.sqlite3")
    assert (database["ENGINE"], database["NAME"]) == (engine, name)


def test_a_postgres_url_keeps_its_credentials_and_reuses_connections():
    database = database_from_url("postgres://router:s%40cret@db.internal:5433/routes", "x")
    assert (database["USER"], database["PASSWORD"]) == ("router", "s@cret")
    assert (database["HOST"], database["PORT"]) == ("db.internal", 5433)
    assert database["CONN_MAX_AGE"] == 60 and database["CONN_HEALTH_CHECKS"] is True


@pytest.mark.parametrize("url", ["mysql://u@h/db", "nonsense://x", "sqlite://"])
def test_a_database_url_the_router_cannot_use_is_refused_naming_the_variable(url):
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL"):
        database_from_url(url, "x")


def test_gunicorn_reads_its_settings_from_the_environment(monkeypatch):
    monkeypatch.setenv("ROUTER_WORKERS", "3")
    monkeypatch.setenv("ROUTER_BIND", "127.0.0.1:9123")
    monkeypatch.setenv("ROUTER_ACCESS_LOG", "")
    conf = runpy.run_path(str(GUNICORN_CONF))
    assert (conf["workers"], conf["bind"], conf["accesslog"]) == (3, "127.0.0.1:9123", None)


def test_a_bad_gunicorn_number_stops_start_up_naming_the_variable(monkeypatch):
    monkeypatch.setenv("ROUTER_THREADS", "sixteen")
    with pytest.raises(ImproperlyConfigured, match="ROUTER_THREADS must be an integer"):
        runpy.run_path(str(GUNICORN_CONF))
