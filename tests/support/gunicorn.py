"""Serving the router under gunicorn in a test: waiting until it answers."""

import time

import pytest
import requests


def wait_until_serving(server, url, seconds=30):
    """Wait until ``url`` answers; fail with gunicorn's output if the process (``server``) exits."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            requests.get(url + "/v1/models", timeout=5)
            return
        except requests.RequestException:
            if server.poll() is not None:
                pytest.fail("gunicorn exited: " + server.stdout.read().decode())
            time.sleep(0.2)
    pytest.fail(f"gunicorn did not answer on {url} within {seconds}s")
