"""The API passes the page-only middlewares by (router_project/api_front.py): its answers carry
the headers they carried before, and the pages keep their sessions, CSRF cookies and static
files."""

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache.backends.locmem import LocMemCache
from django.http import JsonResponse
from django.test import Client
from django.urls import get_resolver
from django.urls import path as route

from router_project.api_front import fixed_api_paths
from router_project.request_signals import caches_close_nothing
from tests.support.api_front import ApiFrontClient

# What every API answer carried before the page-only middlewares stepped aside: its id, the
# security headers (SecurityMiddleware, XFrameOptionsMiddleware), its length (CommonMiddleware).
API_HEADERS = {
    "Content-Type",
    "Content-Length",
    "X-Request-Id",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "Referrer-Policy",
    "Cross-Origin-Opener-Policy",
}
SECURITY = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}


@pytest.fixture
def api(router_config, api_key):
    return Client(HTTP_AUTHORIZATION=f"Bearer {api_key}")


def _answers(api):
    hi = json.dumps({"model": "echo-medium", "messages": [{"role": "user", "content": "hi"}]})
    return {
        "models": api.get("/v1/models"),
        "a completion": api.post("/v1/chat/completions", hi, content_type="application/json"),
        "no key": Client().get("/v1/models"),
        "unknown endpoint": api.get("/v1/nowhere"),
        "the API root": api.get("/v1"),
        "wrong method": api.delete("/v1/models"),
    }


def test_every_api_answer_carries_its_id_and_the_security_headers_and_no_cookie(api):
    for case, response in _answers(api).items():
        names = set(response.headers)
        assert names >= API_HEADERS, (case, names)
        assert {name: response[name] for name in SECURITY} == SECURITY, case
        assert not response.cookies, case
        assert "Vary" not in response and "Content-Security-Policy" not in response, case
        assert response["Content-Type"].startswith("application/json"), case


def test_an_api_answer_adds_only_its_own_headers_to_those(api):
    # The router's own (X-Router-*, rate limits, x-should-retry on a refusal) and a 405's Allow:
    # nothing of a page's.
    for case, response in _answers(api).items():
        extra = set(response.headers) - API_HEADERS
        assert all(
            re.match(r"(?i)x-router-|x-ratelimit-|x-should-retry$|allow$", name) for name in extra
        ), (
            case,
            extra,
        )


@pytest.mark.django_db
def test_a_bad_host_on_the_api_is_still_a_json_400():
    response = Client().get("/v1/models", HTTP_HOST="evil.example")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "disallowed_host"
    assert response["X-Request-Id"]


@pytest.mark.django_db
def test_a_page_still_gets_its_csrf_cookie_and_a_login_still_holds_its_session(staff_user):
    browser = Client(enforce_csrf_checks=True)
    login = browser.get("/admin/login/")
    assert login.status_code == 200 and "csrftoken" in login.cookies

    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', login.content).group(1)
    form = {"username": staff_user.username, "password": "x" * 12, "next": "/admin/"}
    refused = Client(enforce_csrf_checks=True).post("/admin/login/", form)
    signed_in = browser.post("/admin/login/", {**form, "csrfmiddlewaretoken": token.decode()})

    assert refused.status_code == 403  # no CSRF token: CsrfViewMiddleware still guards pages
    assert signed_in.status_code == 302 and "sessionid" in signed_in.cookies
    assert browser.get("/admin/").status_code == 200


@pytest.mark.django_db
def test_admins_static_files_are_still_served():
    response = Client().get("/static/admin/css/base.css")

    assert response.status_code == 200
    assert b"".join(response.streaming_content).strip()


# The served application's handler takes the API's shorter way (router_project.api_front.ApiFront):
# its own middleware chain and the fixed paths resolved once. Each case below is sent through
# it and through Django's test client, which takes the whole chain, and must be answered alike.

HI = [{"role": "user", "content": "hi"}]
COMPLETIONS = {
    "/v1/chat/completions": {"model": "echo-medium", "messages": HI},
    "/v1/messages": {"model": "echo-medium", "max_tokens": 50, "messages": HI},
    "/v1/responses": {"model": "echo-medium", "input": "hi"},
}


def _crash(*args, **kwargs):
    raise RuntimeError("boom")


def _cases(key):
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    cases = {
        f"a completion on {path}": ("post", path, json.dumps(body), bearer)
        for path, body in COMPLETIONS.items()
    }
    return {
        **cases,
        "count_tokens": (
            "post",
            "/v1/messages/count_tokens",
            json.dumps({"model": "echo-medium", "messages": HI}),
            bearer,
        ),
        "models": ("get", "/v1/models", None, bearer),
        "a model": ("get", "/v1/models/echo-medium", None, bearer),
        "no key": ("post", "/v1/chat/completions", "{}", {}),
        "a wrong key": ("post", "/v1/messages", "{}", {"HTTP_AUTHORIZATION": "Bearer rk-wrong"}),
        "bad JSON": ("post", "/v1/chat/completions", "{nope", bearer),
        "a wrong method": ("get", "/v1/chat/completions", None, bearer),
        "a wrong method on messages": ("delete", "/v1/messages", None, bearer),
        "an unknown endpoint": ("get", "/v1/nowhere", None, bearer),
        "the API root": ("get", "/v1", None, bearer),
        "without /v1": ("post", "/chat/completions", "{}", bearer),
        "/v1 twice": ("post", "/v1/v1/messages", "{}", bearer),
        "a bad host": ("get", "/v1/models", None, {**bearer, "HTTP_HOST": "evil.example"}),
        "an unknown stored response": ("get", "/v1/responses/resp_nothing", None, bearer),
    }


def _send(client, method, path, data, extra):
    if data is None:
        return getattr(client, method)(path, **extra)
    return getattr(client, method)(path, data, content_type="application/json", **extra)


def _seen(response, logged):
    """What a client sees and the log says, less what differs from one request to the next."""
    volatile = {"X-Request-Id"}
    if response.status_code == 200:  # an answer with its decision: ids, times, sizes
        volatile |= {name for name in response.headers if name.lower().startswith("x-router-")}
        volatile |= {"Content-Length"}
        body = None
    else:
        body = response.content
    request_id = response["X-Request-Id"]
    headers = {
        name: (None if name in volatile else value) for name, value in response.headers.items()
    }
    lines = [line.replace(request_id, "<id>") for line in logged]
    return response.status_code, headers, body, lines


def _seen_through(client_class, key, caplog):
    client = client_class(raise_request_exception=False)
    seen = {}
    for case, (method, path, data, extra) in _cases(key).items():
        caplog.clear()
        response = _send(client, method, path, data, extra)
        seen[case] = _seen(response, [r.getMessage() for r in caplog.records])
    return seen


def test_every_api_path_answers_the_short_way_as_the_whole_chain_errors_included(
    router_config, api_key, caplog
):
    with caplog.at_level(logging.INFO):
        whole = _seen_through(Client, api_key, caplog)
        short = _seen_through(ApiFrontClient, api_key, caplog)

    assert list(short) == list(whole)
    for case in whole:
        assert short[case] == whole[case], case
    assert {case: status for case, (status, *_) in short.items()} == {
        **{f"a completion on {path}": 200 for path in COMPLETIONS},
        "count_tokens": 200,
        "models": 200,
        "a model": 200,
        "no key": 401,
        "a wrong key": 401,
        "bad JSON": 400,
        "a wrong method": 405,
        "a wrong method on messages": 405,
        "an unknown endpoint": 404,
        "the API root": 404,
        "without /v1": 404,
        "/v1 twice": 404,
        "a bad host": 400,
        "an unknown stored response": 404,
    }


@pytest.mark.parametrize(
    "where",
    [
        "routing.completion.plan_request",  # in the view: ApiErrorMiddleware's hook
        "django.middleware.clickjacking.XFrameOptionsMiddleware.process_response",  # a layer
    ],
)
def test_a_crash_on_the_short_way_is_the_same_json_500_with_the_same_headers_and_log(
    router_config, api_key, caplog, monkeypatch, where
):
    monkeypatch.setattr(where, _crash)
    body = json.dumps(COMPLETIONS["/v1/chat/completions"])
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {api_key}"}
    seen = []
    for client_class in (Client, ApiFrontClient):
        client = client_class(raise_request_exception=False)
        with caplog.at_level(logging.INFO):
            caplog.clear()
            response = _send(client, "post", "/v1/chat/completions", body, bearer)
        assert response.status_code == 500
        assert response.json()["error"]["code"] == "internal_error"
        seen.append(_seen(response, [r.getMessage() for r in caplog.records]))

    assert seen[0] == seen[1]


@pytest.mark.django_db
def test_a_middleware_that_answers_before_the_view_answers_the_short_way_as_the_whole_chain(
    settings, api_key, caplog
):
    settings.SECURE_SSL_REDIRECT = True  # SecurityMiddleware answers a redirect to https
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {api_key}"}
    seen = []
    for client_class in (Client, ApiFrontClient):
        with caplog.at_level(logging.INFO):
            caplog.clear()
            response = client_class().get("/v1/models", **bearer)
        assert response.status_code == 301
        assert response["Location"] == "https://testserver/v1/models"
        seen.append(_seen(response, [r.getMessage() for r in caplog.records]))

    assert seen[0] == seen[1]


@pytest.mark.django_db
def test_a_page_on_the_short_way_handler_keeps_its_csrf_cookie_its_session_and_its_csp(
    staff_user,
):
    browser = ApiFrontClient(enforce_csrf_checks=True)
    login = browser.get("/admin/login/")
    assert "csrftoken" in login.cookies and "Content-Security-Policy" in login
    assert set(login.headers) == set(Client().get("/admin/login/").headers)

    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', login.content).group(1)
    form = {"username": staff_user.username, "password": "x" * 12, "next": "/admin/"}
    signed_in = browser.post("/admin/login/", {**form, "csrfmiddlewaretoken": token.decode()})
    assert signed_in.status_code == 302 and "sessionid" in signed_in.cookies
    assert browser.get("/admin/").status_code == 200
    assert ApiFrontClient(enforce_csrf_checks=True).post("/admin/login/", form).status_code == 403


def test_the_apis_fixed_paths_are_resolved_as_the_url_map_resolves_them():
    resolver = get_resolver()
    resolved = fixed_api_paths(resolver)

    assert set(COMPLETIONS) | {"/v1/models", "/v1/messages/count_tokens"} == set(resolved)
    for path, match in resolved.items():
        again = resolver.resolve(path)
        assert (match.func, match.url_name, match.route) == (
            again.func,
            again.url_name,
            again.route,
        )


def _other_map_models(request):
    return JsonResponse({"from": "another URL map"})


urlpatterns = [route("v1/models", _other_map_models)]


@pytest.mark.django_db
def test_a_url_map_changed_at_run_time_is_followed_on_the_fixed_paths(settings, api_key):
    client = ApiFrontClient(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    assert client.get("/v1/models").json()["object"] == "list"

    settings.ROOT_URLCONF = __name__
    assert client.get("/v1/models").json() == {"from": "another URL map"}
    assert client.get("/v1/chat/completions").status_code == 404  # not in that map


SERVED = """
import router_project.wsgi as served
from django.core.cache import close_caches
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
print(type(served.application.app).__name__)
print(request_finished.disconnect(close_caches))
print(request_started.disconnect(close_old_connections))
print(request_finished.disconnect(close_old_connections))
"""


def test_the_served_application_takes_the_apis_short_way_and_still_checks_its_connections(
    tmp_path, settings, router_config
):
    served = subprocess.run(
        [sys.executable, "-c", SERVED],
        env={
            **os.environ,
            "ROUTER_DATA_DIR": str(tmp_path),
            "ROUTER_CONFIG": settings.ROUTER_CONFIG,
        },
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        check=True,
    )
    # The short way; no walk of the caches as a request ends; an aged or broken database
    # connection still replaced as each request starts and ends.
    assert served.stdout.split() == ["ApiFrontHandler", "False", "True", "True"]


class ClosingCache(LocMemCache):
    def close(self, **kwargs):
        pass


def test_caches_are_still_closed_after_each_request_when_one_of_them_closes_something():
    default = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    closing = {**default, "held": {"BACKEND": f"{__name__}.ClosingCache"}}

    assert caches_close_nothing(default)
    assert not caches_close_nothing(closing)
