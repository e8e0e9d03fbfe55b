"""A provider key cut between two streamed events never reaches the client whole.

Each test upstream streams an answer naming the key it was sent, cut between
two text deltas (tests/support/split_key.py): no event holds the key, the
client's joined text does. The official SDKs read each stream path and join
the deltas as an agent would.
"""

import json

import anthropic
import openai
import pytest

from routing.models import RouteDecision
from routing.protocols.base import Event
from routing.providers.redact import Redactor, StreamRedactor
from tests.support.config import ANTHROPIC_KEY, PROVIDER_KEY, _model, claude_model

pytestmark = pytest.mark.django_db(transaction=True)

HI = [{"role": "user", "content": "hi"}]
CLEAN = "the key is [redacted] ok"


@pytest.fixture
def router(live_server, api_key, responses_config_data, write_config):
    responses_config_data["models"] += [
        _model("splitkey-medium", "medium", 1.0),
        _model("native-splitkey", "medium", 1.0, provider="native"),
        claude_model("claude-splitkey"),
    ]
    write_config(responses_config_data)
    return live_server.url + "/v1", api_key


def chat_text(url, key, model) -> str:
    sdk = openai.OpenAI(base_url=url, api_key=key, max_retries=0)
    chunks = sdk.chat.completions.create(model=model, messages=HI, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def messages_text(url, key, model) -> str:
    sdk = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key=key, max_retries=0)
    with sdk.messages.stream(model=model, max_tokens=100, messages=HI) as stream:
        return stream.get_final_text()


def responses_text(url, key, model) -> str:
    sdk = openai.OpenAI(base_url=url, api_key=key, max_retries=0)
    events = sdk.responses.create(model=model, input="hi", stream=True)
    return "".join(e.delta for e in events if e.type == "response.output_text.delta")


PATHS = [
    (chat_text, "splitkey-medium", PROVIDER_KEY),  # chat over chat, relayed as it came
    (chat_text, "claude-splitkey", ANTHROPIC_KEY),  # chat over an Anthropic upstream
    (chat_text, "native-splitkey", PROVIDER_KEY),  # chat over a Responses-capable upstream
    (messages_text, "claude-splitkey", ANTHROPIC_KEY),  # Messages native
    (messages_text, "splitkey-medium", PROVIDER_KEY),  # Messages over chat
    (responses_text, "native-splitkey", PROVIDER_KEY),  # Responses native
    (responses_text, "splitkey-medium", PROVIDER_KEY),  # Responses over chat
]


@pytest.mark.parametrize("read, model, secret", PATHS)
def test_a_key_cut_between_two_events_reaches_the_client_redacted(router, read, model, secret):
    url, key = router

    text = read(url, key, model)

    assert secret not in text
    assert text == CLEAN
    row = RouteDecision.objects.get()
    assert row.status_code == 200


def relayed(pieces: list[str]) -> list[str]:
    """The text deltas a client is sent for chat chunks carrying ``pieces``."""
    redactor = StreamRedactor(Redactor([PROVIDER_KEY]))
    out = []
    for piece in pieces:
        raw = b'data: {"choices": [{"index": 0, "delta": {"content": %s}}]}' % (
            json.dumps(piece).encode()
        )
        out += redactor.feed(Event.parse(raw), raw)
    out += redactor.close()
    return [event.data["choices"][0]["delta"]["content"] for event in out]


def test_a_key_cut_into_one_character_a_delta_is_redacted():
    pieces = ["say "] + list(PROVIDER_KEY) + [" done"]

    assert "".join(relayed(pieces)) == "say [redacted] done"


def test_a_delta_that_only_looks_like_a_keys_start_is_relayed_unchanged():
    pieces = ["the sk-pro", "duct is fine", "s"]

    assert relayed(pieces) == pieces


def test_the_deltas_of_a_clean_stream_go_out_byte_for_byte():
    redactor = StreamRedactor(Redactor([PROVIDER_KEY]))
    raws = [
        b'data: {"choices": [{"index": 0, "delta": {"content": "x sk"}}]}',
        b'data: {"choices": [{"index": 0, "delta": {"content": "y"}}]}',
    ]
    out = []
    for raw in raws:
        out += redactor.feed(Event.parse(raw), raw)
    assert [event.sse() for event in out] == raws
