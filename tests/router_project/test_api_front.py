"""The API passes the page-only middlewares by (router_project/api_front.py): its answers carry
the headers they carried before, and the pages keep their sessions, CSRF cookies and static
files."""

import json
import re

import pytest
from django.test import Client

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
