"""The router as a user serves it: gunicorn, DJANGO_DEBUG=0, plain HTTP on loopback."""

import openai
import pytest
import requests

from tests.support.config import base_config
from tests.support.openai_upstream import ANSWER
from tests.support.served import gunicorn_router, prepare, router_env


@pytest.fixture
def served_router(tmp_path, upstream):
    env = router_env(tmp_path, base_config(upstream.base_url))
    with gunicorn_router(env, prepare(env)) as served:
        yield served


def test_gunicorn_serves_plain_and_streamed_answers_to_the_openai_sdk(served_router):
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

    assert served_router.count_rows(status_code=200) == 2


def test_gunicorn_answers_unknown_paths_without_debug_pages(served_router):
    response = requests.get(served_router.url + "/nowhere", timeout=5)
    assert response.status_code == 404
    assert "Traceback" not in response.text
