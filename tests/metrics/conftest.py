"""Fixtures for the metrics tests: a config file of our own, keys and staff users."""

import itertools

import pytest
import yaml

from routing.auth import create_api_key
from routing.config import DEFAULT_CONFIG_PATH, RouterConfig, validate_config
from routing.config.source import set_dotted


@pytest.fixture
def write_config(tmp_path, settings):
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
def router_config(write_config) -> RouterConfig:
    """The shipped defaults, from a file in tmp_path (pinch on, cache rate 0)."""
    return write_config()


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
    return django_user_model.objects.create_user("operator", password="x" * 12, is_staff=True)


# --- The dashboard, admin and TUI tests (test_admin_*, test_dashboard_*, test_tui_*) ---


@pytest.fixture
def savings_rows(db):
    """Decisions whose pinch figures are known by heart (cache rate 0, shipped prices).

    In the 30-day window: 6 calls, 4 pruned (66.67%), 6,050 tokens saved, median 750
    (mean of 300 and 1,200), $0.004320 (1,200 at gpt-4.1's $2/M + 4,800 at
    gpt-4.1-mini's $0.40/M; the retired model's 50 tokens cannot be priced).
    """
    from datetime import timedelta

    from tests.metrics.factories import decision, seed

    return seed(
        decision(saved=1200, age=timedelta(minutes=5)),
        decision(saved=300, age=timedelta(days=1), chosen_model="gpt-4.1-mini", tier="medium"),
        decision(saved=4500, age=timedelta(days=5), chosen_model="gpt-4.1-mini", stream=True),
        decision(saved=0, age=timedelta(days=2), status_code=502),
        decision(age=timedelta(days=3), path="passthrough"),  # pinch off for this one
        decision(saved=50, age=timedelta(days=4), chosen_model="retired-model"),
        decision(saved=9999, age=timedelta(days=45)),  # outside the window
    )
