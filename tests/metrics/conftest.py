"""Fixtures for the metrics tests: a config file of our own, keys and staff users."""
import itertools

import pytest
import yaml

from routing.auth import create_api_key
from routing.config import DEFAULT_CONFIG_PATH, RouterConfig, set_dotted, validate_config


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
