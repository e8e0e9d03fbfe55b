"""The router as a user serves it: gunicorn, DJANGO_DEBUG=0, plain HTTP on loopback."""

import json
import subprocess
import sys
from pathlib import Path

import openai
import pytest
import requests

from tests.support.config import base_config
from tests.support.openai_upstream import ANSWER
from tests.support.served import gunicorn_router, prepare, router_env

ROOT = Path(__file__).resolve().parents[2]


# One router for the module (its tests go to one worker: tests/conftest.py).
@pytest.fixture(scope="module")
def served_router(tmp_path_factory, module_upstream):
    env = router_env(tmp_path_factory.mktemp("served"), base_config(module_upstream.base_url))
    with gunicorn_router(env, prepare(env)) as served:
        yield served


def test_gunicorn_serves_plain_and_streamed_answers_to_the_openai_sdk(served_router):
    answered = served_router.count_rows(status_code=200)  # by the module's earlier tests
    sdk = openai.OpenAI(
        base_url=served_router.url + "/v1", api_key=served_router.key, max_retries=0, timeout=20
    )
    reply = sdk.chat.completions.create(model="auto", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == ANSWER
    chunks = list(
        sdk.chat.completions.create(
            model="echo-medium", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).strip() == ANSWER

    assert served_router.count_rows(status_code=200) == answered + 2


def test_gunicorn_answers_unknown_paths_without_debug_pages(served_router):
    page = requests.get(served_router.url + "/nowhere", timeout=30)
    assert page.status_code == 404
    # Django's debug 404 lists the URL patterns ("Using the URLconf defined in ...").
    assert "URLconf" not in page.text and "router_project.urls" not in page.text

    api = requests.get(served_router.url + "/v1/nowhere", timeout=30)
    assert api.status_code == 404
    assert api.headers["Content-Type"].startswith("application/json")
    assert api.json()["error"]["code"] == "unknown_endpoint"


def _chunks(body: bytes, size: int = 7):
    # A generator body: requests sends it with Transfer-Encoding: chunked, no Content-Length.
    for start in range(0, len(body), size):
        yield body[start : start + size]


def test_a_chunked_body_is_read_in_full_when_gunicorn_serves_directly(served_router):
    body = json.dumps({"model": "echo-medium", "messages": [{"role": "user", "content": "hi"}]})
    response = requests.post(
        served_router.url + "/v1/chat/completions",
        data=_chunks(body.encode()),
        headers={"Authorization": f"Bearer {served_router.key}"},
        timeout=20,
    )
    assert response.request.headers.get("Transfer-Encoding") == "chunked"
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == ANSWER


def test_a_chunked_body_over_the_limit_is_a_413_naming_it(tmp_path, upstream):
    env = router_env(tmp_path, base_config(upstream.base_url), ROUTER_MAX_BODY_BYTES="2000")
    long = [{"role": "user", "content": "x" * 5000}]
    body = json.dumps({"model": "echo-medium", "messages": long})
    with gunicorn_router(env, prepare(env)) as served:
        response = requests.post(
            served.url + "/v1/chat/completions",
            data=_chunks(body.encode(), 500),
            headers={"Authorization": f"Bearer {served.key}"},
            timeout=20,
        )
    assert response.status_code == 413
    assert "2000" in response.json()["error"]["message"]


def test_head_of_the_front_page_is_answered_without_a_body_and_logs_nothing(tmp_path, upstream):
    env = router_env(tmp_path, base_config(upstream.base_url), ROUTER_ACCESS_LOG="-")
    with gunicorn_router(env, prepare(env)) as served:
        heads = [requests.head(served.url + "/", timeout=5) for _ in range(3)]
    assert all(h.status_code == 200 and h.content == b"" for h in heads)
    log = served.process.stdout.read().decode()
    assert '"HEAD / HTTP/1.1" 200' in log  # the access log saw them
    assert "no-body response" not in log


def _raw_request(url: str, request: bytes) -> tuple[int, str, bytes]:
    """(status, content type, body) of a raw HTTP/1.1 request sent over a socket."""
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(url)
    with socket.create_connection((where.hostname, where.port), timeout=10) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers.get("Content-Type", ""), body


@pytest.mark.parametrize(
    "request_bytes, status",
    [
        (b"GET /v1/models?" + b"a" * 10_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
        (b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 10_000 + b"\r\n\r\n", 431),
    ],
    ids=["request line too long", "header too large"],
)
def test_gunicorns_own_refusals_answer_json_not_html(served_router, request_bytes, status):
    code, content_type, body = _raw_request(served_router.url, request_bytes)

    assert code == status
    assert content_type == "application/json"
    error = json.loads(body)["error"]
    assert error["message"] and error["type"] == "invalid_request_error"
    assert b"<html" not in body


def test_a_worker_leaves_what_it_loaded_out_of_the_collectors_passes():
    # In a process of its own: the hook changes the collector of the process it runs in.
    script = (
        "import gc, runpy\n"
        "hooks = runpy.run_path('router_project/gunicorn.conf.py')\n"
        "hooks['post_worker_init'](None)\n"
        "print(gc.get_freeze_count(), gc.get_threshold()[0], hooks['YOUNG_COLLECTION_THRESHOLD'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    frozen, young, meant = map(int, out.stdout.split())

    assert frozen > 1000  # the modules' objects, at the least
    assert young == meant > 700  # CPython's default
