"""The router as a user serves it: gunicorn, DJANGO_DEBUG=0, plain HTTP on loopback."""

import os
import subprocess
import sys
from pathlib import Path

import openai
import pytest
import requests
import yaml

from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV, base_config
from tests.support.gunicorn import wait_until_serving
from tests.support.openai_upstream import ANSWER
from tests.support.ports import listening_socket

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def served_router(tmp_path, upstream):
    config = tmp_path / "router.yaml"
    config.write_text(yaml.safe_dump(base_config(upstream.base_url)))
    listener = listening_socket()
    sock = listener.__enter__()
    port = sock.getsockname()[1]
    env = {
        **os.environ,
        # Its own SQLite file: the served process must not touch the test database.
        "DATABASE_URL": f"sqlite:///{tmp_path / 'router.sqlite3'}",
        "ROUTER_DATA_DIR": str(tmp_path),
        "ROUTER_CONFIG": str(config),
        "DJANGO_DEBUG": "0",
        # The test's own listening socket, handed over: no other process can take the port.
        "ROUTER_BIND": f"fd://{sock.fileno()}",
        "ROUTER_WORKERS": "2",
        "ROUTER_ACCESS_LOG": "",
        PROVIDER_KEY_ENV: PROVIDER_KEY,
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    out = subprocess.run(
        [*manage, "createapikey", "e2e"],
        env=env,
        check=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    key = out.strip().splitlines()[-1]
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "router_project/gunicorn.conf.py")],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        pass_fds=(sock.fileno(),),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(server, url)
        yield url, key, env
    finally:
        # Also when start-up failed: a gunicorn left behind would outlive the tests.
        server.terminate()
        server.wait(20)
        listener.__exit__(None, None, None)


def test_gunicorn_serves_plain_and_streamed_answers_to_the_openai_sdk(served_router):
    url, key, env = served_router
    sdk = openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=20)
    reply = sdk.chat.completions.create(model="auto", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == ANSWER
    chunks = list(
        sdk.chat.completions.create(
            model="echo-medium", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).strip() == ANSWER

    count = (
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "manage.py"),
                "shell",
                "-c",
                "from routing.models import RouteDecision as R; "
                "print(R.objects.filter(status_code=200).count())",
            ],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    assert count == "2"


def test_gunicorn_answers_unknown_paths_without_debug_pages(served_router):
    url, _, _ = served_router
    response = requests.get(url + "/nowhere", timeout=5)
    assert response.status_code == 404
    assert "Traceback" not in response.text
