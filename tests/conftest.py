"""Fixtures shared by every app's tests.

Two configs, two names: ``router_config`` is the test config (a dict, pointed at
the test upstream, see tests/support/config.py); ``default_config`` is the
shipped defaults (a RouterConfig), for the figures tests that price with them.
"""

import copy
import itertools
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from xdist.scheduler import LoadScopeScheduling

from routing.auth import create_api_key
from routing.config import DEFAULT_CONFIG_PATH, RouterConfig, validate_config
from routing.config.source import set_dotted
from routing.replay.corpus import corpus_dir as corpus_dir_path
from tests.support.anthropic_upstream import AnthropicServer
from tests.support.ci import missing
from tests.support.config import (
    ANTHROPIC_KEY,
    ANTHROPIC_KEY_ENV,
    PROVIDER_KEY,
    PROVIDER_KEY_ENV,
    anthropic_config,
    base_config,
    responses_config,
)
from tests.support.decisions import decision, seed
from tests.support.openai_upstream import UpstreamServer

CORPUS_DIR = corpus_dir_path()

# What gives a test the test database (pytest-django refuses it to any other test).
DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "live_server",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
}


def pytest_addoption(parser):
    parser.addoption(
        "--database-tests-only",
        action="store_true",
        help="only the tests that use the test database or DATABASE_URL (a second database's "
        "pass: the others would check the same thing again)",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "database_url: the test reads DATABASE_URL itself (a router it serves on the pass's "
        "database): --database-tests-only keeps it",
    )


# Modules whose tests share one router served for the module (a fixture of scope="module").
SHARED_ROUTER_MODULES = {
    "tests/routing/test_deployment.py",
    "tests/routing/test_gunicorn.py",
    "tests/routing/test_slow_clients.py",
    "tests/router_project/test_plain_requests_served.py",
}


class SharedRouterScheduling(LoadScopeScheduling):
    """xdist's load scheduling, but a module of SHARED_ROUTER_MODULES goes to one worker whole.

    Sent test by test, a module's tests land on every worker, each then starting the
    module's router. (xdist's own loadgroup does not group under pytest 9: it renames
    the tests through an attribute pytest no longer reads.)
    """

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return module if module in SHARED_ROUTER_MODULES else nodeid


def pytest_xdist_make_scheduler(config, log):
    return SharedRouterScheduling(config, log)


def uses_the_database(item) -> bool:
    return bool(
        item.get_closest_marker("django_db")
        or item.get_closest_marker("database_url")
        or DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
    )


def pytest_collection_modifyitems(config, items):
    """--database-tests-only: leave out the tests no database plays a part in.

    A test without the test database (pytest-django would refuse it a query) and
    without the database_url mark runs the same on SQLite and on PostgreSQL: pure
    code, or a router served on a database of its own (its SQLite file, a scratch
    PostgreSQL database).
    """
    if not config.getoption("--database-tests-only"):
        return
    kept = [item for item in items if uses_the_database(item)]
    config.hook.pytest_deselected(items=[item for item in items if not uses_the_database(item)])
    items[:] = kept


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, with the sessions still open on it ended before it is
    dropped.

    The live server answers each kept-alive client socket on a thread of its own, and
    on PostgreSQL a thread keeps its database connection between requests
    (``CONN_MAX_AGE``) until its client closes the socket. An SDK client a test
    left open keeps that thread and its session alive to the end of the run, and
    the database's DROP then failed ("is being accessed by other users", one to
    sixteen sessions, as many as a test had client threads), leaving
    test_router_gwN on the server.
    """
    yield
    from django.db import connection

    with django_db_blocker.unblock():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )


@pytest.fixture(autouse=True)
def fresh_router_state(settings, tmp_path_factory):
    """Each test starts with its own data directory (spool, change counter) and empty caches.

    The caches (config rows, checked keys, reserved decision ids) are right
    across requests, but a test's database is rolled back behind their back.
    """
    from routing.auth import forget_checked_keys
    from routing.config.store import forget_cached_config
    from routing.limits.admission import forget_limit_state
    from routing.local_vision import forget_descriptions
    from routing.prefix_probe import forget_conversations
    from routing.recall.store import rows_written_behind
    from routing.recording.ids import forget_reserved_ids

    settings.DATA_DIR = tmp_path_factory.mktemp("data")
    # Most tests read /metrics as an operator who made it public; the closed
    # default and the token are tests/metrics/test_metrics_endpoint.py's.
    settings.METRICS_PUBLIC = True

    def forget():
        forget_cached_config()
        forget_checked_keys()
        forget_reserved_ids()
        forget_conversations()
        forget_descriptions()
        forget_limit_state()
        rows_written_behind(0.0)  # a test that ran this process's writer set it

    forget()
    yield
    forget()


@pytest.fixture
def upstream():
    server = UpstreamServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def module_upstream():
    """The test upstream for a module whose tests share one served router (scope="module")."""
    server = UpstreamServer().start()
    yield server
    server.stop()


@pytest.fixture
def anthropic_upstream():
    """The Anthropic Messages test server; every test ends with it having seen no protocol error."""
    server = AnthropicServer().start()
    yield server
    server.stop()
    assert server.protocol_errors == []


@pytest.fixture
def responses_config_data(upstream, anthropic_upstream, write_config, monkeypatch):
    """The Responses test config (tests/support/config.py responses_config), written; its data."""
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, ANTHROPIC_KEY)
    data = responses_config(anthropic_upstream.base_url, upstream.base_url)
    write_config(data)
    return data


@pytest.fixture
def write_config(tmp_path, settings):
    """write_config(data) -> path; the router reads it on the next request."""
    counter = {"n": 0}

    def write(data: dict) -> Path:
        counter["n"] += 1
        path = tmp_path / f"router-{counter['n']}.yaml"
        path.write_text(yaml.safe_dump(data))
        settings.ROUTER_CONFIG = str(path)
        return path

    return write


@pytest.fixture
def router_config(upstream, write_config, monkeypatch):
    """The standard test config, pointed at the test upstream; returns its data (a copy)."""
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    data = base_config(upstream.base_url)
    write_config(data)
    return copy.deepcopy(data)


@pytest.fixture
def claude_config(anthropic_upstream, upstream, write_config, monkeypatch, router_config):
    """The standard config plus Claude models on the Anthropic test upstream; returns its data."""
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, ANTHROPIC_KEY)
    data = anthropic_config(anthropic_upstream.base_url, upstream.base_url)
    write_config(data)
    return data


@pytest.fixture
def api_key(db):
    key, raw = create_api_key("tests")
    return raw


@pytest.fixture
def corpus_dir():
    if not CORPUS_DIR.is_dir():
        missing(f"the shared corpus at {CORPUS_DIR} (set CORPUS_DIR)")
    return CORPUS_DIR


@pytest.fixture
def write_default_config(tmp_path, settings):
    """Write the shipped default config with dotted-key changes; the router then reads it.

    Returns the validated RouterConfig (without admin overrides). Each call writes a
    new file, so the per-path config cache never serves an earlier version.
    """
    numbers = itertools.count()

    def write(changes: dict | None = None) -> RouterConfig:
        data = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text())
        for key, value in (changes or {}).items():
            set_dotted(data, key, value)
        path = tmp_path / f"router-{next(numbers)}.yaml"
        path.write_text(yaml.safe_dump(data))
        settings.ROUTER_CONFIG = str(path)
        return validate_config(data)

    return write


@pytest.fixture
def default_config(write_default_config) -> RouterConfig:
    """The shipped defaults as a RouterConfig, from a file in tmp_path (pinch on, cache rate 0)."""
    return write_default_config()


@pytest.fixture
def staff_key(db):
    _, raw = create_api_key("dashboard", is_staff=True)
    return raw


@pytest.fixture
def plain_key(db):
    _, raw = create_api_key("agent", is_staff=False)
    return raw


@pytest.fixture
def staff_user(django_user_model):
    """An operator: staff, allowed to view decisions (what the dashboard's table needs)."""
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("operator", password="x" * 12, is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_routedecision"))
    return user


@pytest.fixture
def bare_staff_user(django_user_model):
    """Staff with no permission at all (may log in to admin, may view nothing)."""
    return django_user_model.objects.create_user("helper", password="x" * 12, is_staff=True)


@pytest.fixture
def savings_rows(db):
    """Decisions whose pinch figures are known by heart (cache rate 0, shipped prices).

    In the 30-day window: 5 answered calls, 4 pruned (80.00%), and a failed one (502) apart;
    6,050 tokens saved, median 750
    (mean of 300 and 1,200), $0.004320 (1,200 at gpt-4.1's $2/M + 4,800 at
    gpt-4.1-mini's $0.40/M; the retired model's 50 tokens cannot be priced).
    """
    return seed(
        decision(saved=1200, age=timedelta(minutes=5)),
        decision(saved=300, age=timedelta(days=1), chosen_model="gpt-4.1-mini", tier="medium"),
        decision(saved=4500, age=timedelta(days=5), chosen_model="gpt-4.1-mini", stream=True),
        decision(saved=0, age=timedelta(days=2), status_code=502),
        decision(age=timedelta(days=3), path="passthrough"),  # pinch off for this one
        decision(saved=50, age=timedelta(days=4), chosen_model="retired-model"),
        decision(saved=9999, age=timedelta(days=45)),  # outside the window
    )
