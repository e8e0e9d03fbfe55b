"""A key is looked up once per request, and a key seen recently is found by its token without a
sha256 (routing/auth.py); a revoked key is still refused within ROUTER_KEY_CACHE_SECONDS, or
at the next request after a change bump."""

import json
import time

import pytest
from django.test import Client

from routing import auth, changes, views
from routing.auth import revoke_api_keys
from routing.models import ApiKey

HI = [{"role": "user", "content": "hi"}]


class Clock:
    """The time module of routing.auth and routing.changes, its monotonic clock moved by hand."""

    time_ns = staticmethod(time.time_ns)  # the counter file's content

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(auth, "time", clock)
    monkeypatch.setattr(changes, "time", clock)
    return clock


@pytest.fixture
def hashes(monkeypatch):
    """The tokens hashed, in order."""
    hashed = []
    hash_key = auth.hash_key
    monkeypatch.setattr(auth, "hash_key", lambda token: hashed.append(token) or hash_key(token))
    return hashed


@pytest.fixture
def post(db, router_config):
    def send(key):
        return Client(HTTP_AUTHORIZATION=f"Bearer {key}").post(
            "/v1/chat/completions",
            data=json.dumps({"model": "echo-medium", "messages": HI}),
            content_type="application/json",
        )

    return send


def test_a_key_seen_a_moment_ago_is_found_without_hashing_its_token(post, api_key, hashes):
    assert post(api_key).status_code == 200
    assert hashes == [api_key]  # looked up in the database by its hash

    assert post(api_key).status_code == 200
    assert post(api_key).status_code == 200
    assert hashes == [api_key]


def test_an_unknown_token_is_hashed_and_looked_up_at_every_request(post, hashes):
    assert post("rk-unknown").status_code == 401
    assert post("rk-unknown").status_code == 401
    assert hashes == ["rk-unknown", "rk-unknown"]


def test_a_request_looks_its_key_up_once(post, api_key, monkeypatch):
    looked_up = []
    key_for_request = views.key_for_request
    monkeypatch.setattr(
        views, "key_for_request", lambda request: looked_up.append(1) or key_for_request(request)
    )

    for _ in range(2):  # the first fills the caches
        looked_up.clear()
        assert post(api_key).status_code == 200
        assert looked_up == [1]


def test_a_revoked_key_is_refused_after_the_cache_window_even_when_its_token_was_seen_a_moment_ago(
    post, api_key, settings, clock
):
    settings.ROUTER_KEY_CACHE_SECONDS = 30
    assert post(api_key).status_code == 200
    ApiKey.objects.update(revoked_at="2026-01-01T00:00:00Z")  # no signal, no counter bump

    clock.now += 29
    assert post(api_key).status_code == 200  # trusted for up to ROUTER_KEY_CACHE_SECONDS
    clock.now += 1.5
    assert post(api_key).status_code == 401
    assert post(api_key).status_code == 401  # a refused key is not remembered


def test_a_key_revoked_through_the_service_is_refused_at_once_though_its_token_was_seen(
    post, api_key, clock
):
    assert post(api_key).status_code == 200
    revoke_api_keys(ApiKey.objects.all())  # bumps the change counter

    assert post(api_key).status_code == 401  # though the clock has not moved


def test_a_key_forgotten_by_the_process_is_looked_up_again(post, api_key, hashes):
    assert post(api_key).status_code == 200
    auth.forget_checked_keys()

    assert post(api_key).status_code == 200
    assert hashes == [api_key, api_key]
