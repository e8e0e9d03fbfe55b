"""Fixtures shared by every app's tests: a test upstream, a config file, API keys."""

import copy
import os
from pathlib import Path

import pytest
import yaml

from bench.corpus import corpus_dir as corpus_dir_path
from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV, base_config
from tests.support.openai_upstream import UpstreamServer

CORPUS_DIR = corpus_dir_path()


@pytest.fixture
def upstream():
    server = UpstreamServer().start()
    yield server
    server.stop()


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
def api_key(db):
    from routing.auth import create_api_key

    key, raw = create_api_key("tests")
    return raw


@pytest.fixture
def corpus_dir():
    if not CORPUS_DIR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the shared corpus at {CORPUS_DIR}")
        pytest.skip(f"the shared corpus is not at {CORPUS_DIR} (set CORPUS_DIR)")
    return CORPUS_DIR
