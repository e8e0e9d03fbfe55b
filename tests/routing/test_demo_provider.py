"""The built-in demo provider, and the shipped config answering before anything is set up.

The shipped file is used as it is, except that its local Ollama is pointed at a
refused port (a machine running Ollama must not change the result) and
OPENAI_API_KEY is unset, as on a fresh machine.
"""

import openai
import pytest
import yaml

from routing.config import DEFAULT_CONFIG_PATH
from routing.models import RouteDecision
from routing.providers.demo import DEMO_NOTICE
from tests.support.ports import refused_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fresh_machine(tmp_path, settings, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text())
    with refused_port() as port:
        data["providers"]["local"]["base_url"] = f"http://127.0.0.1:{port}/v1"
        path = tmp_path / "shipped.yaml"
        path.write_text(yaml.safe_dump(data))
        settings.ROUTER_CONFIG = str(path)
        yield port


@pytest.fixture
def sdk(live_server, fresh_machine, api_key):
    return openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)


HI = [{"role": "user", "content": "hi"}]


def test_the_shipped_config_answers_the_demo_model_out_of_the_box(sdk):
    reply = sdk.chat.completions.create(model="demo", messages=HI)

    text = reply.choices[0].message.content
    assert text.startswith(DEMO_NOTICE)
    assert "'hi'" in text and "ROUTER_CONFIG" in text
    assert reply.model == "demo"
    assert reply.usage.prompt_tokens == 7  # the router's measure of one "hi" message
    decision = RouteDecision.objects.get()
    assert (decision.chosen_model, decision.provider, decision.status_code) == (
        "demo",
        "demo",
        200,
    )


def test_the_demo_streams_like_any_provider(sdk):
    chunks = list(
        sdk.chat.completions.create(
            model="demo", messages=HI, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith(DEMO_NOTICE)
    assert chunks[-1].usage.completion_tokens > 0
    assert RouteDecision.objects.get().stream is True


def test_auto_never_picks_the_demo_and_says_what_is_missing(sdk, fresh_machine):
    with pytest.raises(openai.APIStatusError) as caught:
        sdk.chat.completions.create(model="auto", messages=HI)

    assert caught.value.status_code == 502
    message = caught.value.message
    local = f"qwen-small: cannot connect to provider 'local' at http://127.0.0.1:{fresh_machine}"
    assert f"Tried {local}/v1 (2 tries); " in message
    assert "gpt-4.1-mini: provider 'openai': the environment variable OPENAI_API_KEY" in message
    assert [a["model"] for a in RouteDecision.objects.get().attempts] == [
        "qwen-small",
        "qwen-small",
        "gpt-4.1-mini",
        "gpt-4.1",
    ]


def test_the_demo_is_listed_with_the_models_that_can_answer(sdk):
    # OPENAI_API_KEY is unset: OpenAI's models cannot answer, so they are not offered.
    assert {m.id for m in sdk.models.list()} == {"auto", "qwen-small", "demo"}
