"""The documented production deployment holds: nginx (docs/deploy/nginx.conf) in front of gunicorn.

Behind nginx, 40 slowloris connections cost no thread and normal requests
keep answering. bench/bench_slowloris.py measures the same with and without
nginx; tests/routing/test_slow_clients.py holds gunicorn alone.
"""

import json
import os
import socket
import subprocess
import sys
import time

import pytest
import requests

from tests.support.config import base_config
from tests.support.served import (
    ROOT,
    gunicorn_router,
    nginx_binary,
    nginx_in_front,
    prepare,
    router_env,
)
from tests.support.slowloris import Slowloris

HI = {"model": "echo-medium", "messages": [{"role": "user", "content": "hi"}]}


# One router and nginx for the module (its tests go to one worker: tests/conftest.py).
@pytest.fixture(scope="module")
def behind_nginx(tmp_path_factory, module_upstream):
    if nginx_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs nginx (scripts/setup --test installs it as root)")
        pytest.skip("nginx is not installed (Debian: apt-get install nginx-light)")
    tmp_path = tmp_path_factory.mktemp("behind-nginx")
    env = router_env(tmp_path, base_config(module_upstream.base_url))
    with (
        gunicorn_router(env, prepare(env)) as router,
        nginx_in_front(tmp_path / "nginx", router) as url,
    ):
        yield url, router


def ask(url, key, **kwargs):
    return requests.post(
        url + "/v1/chat/completions",
        json=HI,
        headers={"Authorization": f"Bearer {key}"},
        timeout=2,  # the promise under test: an answer within 2 s
        **kwargs,
    )


def test_normal_requests_answer_while_40_slowloris_connections_trickle(behind_nginx):
    url, router = behind_nginx
    port = int(url.rsplit(":", 1)[1])

    with (
        Slowloris(port, 20, "headers", seconds=20) as heads,
        Slowloris(port, 20, "body", seconds=20) as bodies,
    ):
        time.sleep(1.5)  # every slow connection open and trickling
        answers = [ask(url, router.key) for _ in range(20)]
        held = heads.still_open() + bodies.still_open()

    assert [answer.status_code for answer in answers] == [200] * 20
    assert held == 40  # the attack was on the whole time: nginx held every slow client
    decisions = [answer.headers["X-Router-Decision-Id"] for answer in answers]
    assert router.count_rows(pk__in=decisions, status_code=200) == 20


def test_errors_nginx_answers_itself_are_json_too(behind_nginx):
    url, router = behind_nginx

    too_large = requests.post(
        url + "/v1/chat/completions",
        data=b"x" * (22 * 1024 * 1024),
        headers={"Authorization": f"Bearer {router.key}", "Content-Type": "application/json"},
        timeout=30,
    )

    assert too_large.status_code == 413
    assert too_large.headers["Content-Type"].startswith("application/json")
    assert too_large.json()["error"]["code"] == "body_too_large"

    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: \x01\r\n\r\n")
        answer = sock.recv(65536).decode("latin-1")
    head, _, body = answer.partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 400")
    assert "application/json" in head
    assert json.loads(body)["error"]["code"] == "bad_request"


def documented_environment() -> dict:
    """docs/deploy/router.env as a dict (KEY=value lines)."""
    env = {}
    for line in (ROOT / "docs" / "deploy" / "router.env").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            env[name] = value
    return env


def test_check_deploy_is_clean_with_the_documented_production_settings(tmp_path):
    env = {**os.environ, **documented_environment()}
    # Settings only: check --deploy needs no database, and this one is not reachable.
    env["ROUTER_DATA_DIR"] = str(tmp_path)
    env["ROUTER_CONFIG"] = ""
    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "check", "--deploy", "--fail-level", "WARNING"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/dashboard/", "/admin/", "/admin/login/"])
def test_html_pages_carry_a_content_security_policy(client, django_user_model, path):
    user = django_user_model.objects.create_superuser("root", password="x" * 12)
    if path != "/admin/login/":
        client.force_login(user)

    response = client.get(path)

    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy


@pytest.mark.django_db
def test_json_answers_carry_no_policy(client):
    response = client.get("/v1/models")
    assert response["Content-Type"].startswith("application/json")
    assert "Content-Security-Policy" not in response


def test_a_chunked_body_reaches_the_router_whole_through_nginx(behind_nginx):
    url, router = behind_nginx
    body = json.dumps(HI).encode()
    response = requests.post(
        url + "/v1/chat/completions",
        data=(body[i : i + 5] for i in range(0, len(body), 5)),
        headers={"Authorization": f"Bearer {router.key}"},
        timeout=20,
    )
    assert response.request.headers.get("Transfer-Encoding") == "chunked"
    assert response.status_code == 200, response.text
    decision = response.headers["X-Router-Decision-Id"]
    assert router.count_rows(pk=decision, status_code=200) == 1
