"""One contract, held by every provider, whatever protocol its upstream speaks.

The dispatcher (retries, fallback, relaying) and the protocols' wires rely on
exactly these promises: every call a wire may make is declared on the
Provider base, and a provider either serves it (its ``capabilities`` say
so) or raises NotImplementedError; an answer is chat-completions JSON, a
stream is chat-completions SSE events ending with ``[DONE]``, and every
failure is a ``ProviderError`` whose kind and ``retryable`` say what
happened; a native call (Messages, Responses) answers in its own protocol.
A new provider earns its place by passing these classes unchanged against a
test server that speaks its protocol (django.contrib.sessions'
``SessionTestsMixin`` shape); the demo provider, which calls nothing, holds
to the part that needs no server.
"""

import json

import pytest

from routing.config import ProviderConfig
from routing.errors import ProviderError
from routing.protocols.messages.shapes import MessagesRequest
from routing.providers import PROVIDER_CLASSES, Capabilities, Provider
from tests.support.anthropic_upstream import AnthropicServer
from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV
from tests.support.openai_upstream import UpstreamServer
from tests.support.ports import refused_port

HELLO = [{"role": "user", "content": "hello"}]
TOOLS = [
    {
        "type": "function",
        "function": {"name": "read_file", "parameters": {"type": "object", "properties": {}}},
    }
]


def chunks_of(reply) -> list[dict]:
    """The JSON chunks of a stream as they would reach the client; a check it ends with [DONE]."""
    events = [event.sse() for event in reply.events]
    reply.close()
    assert events[-1] == b"data: [DONE]"
    return [json.loads(e[len(b"data:") :]) for e in events[:-1] if e.startswith(b"data:")]


# Every provider call a wire makes (routing.protocols.*.wire), and the capability it needs.
WIRE_CALLS = {
    "chat": None,
    "chat_stream": None,
    "messages": "messages",
    "messages_stream": "messages",
    "count_tokens": "messages",
    "responses": "responses",
    "responses_stream": "responses",
}
NATIVE_ARGUMENTS = {
    "messages": (MessagesRequest({}), None, {}),
    "messages_stream": (MessagesRequest({}), None, {}),
    "count_tokens": ({}, {}),
    "responses": ({},),
    "responses_stream": ({},),
}


def test_every_call_a_wire_makes_is_declared_on_the_base():
    base = Provider("base", ProviderConfig(kind="demo", base_url="http://127.0.0.1:9"))
    assert base.capabilities == Capabilities()
    for name in WIRE_CALLS:
        with pytest.raises(NotImplementedError):
            getattr(base, name)(*NATIVE_ARGUMENTS.get(name, ({},)))


def test_every_provider_kind_is_held_to_the_contract():
    held = {cls.kind for cls in (TestOpenAICompatibleProvider, TestAnthropicProvider, TestDemo)}
    assert held == set(PROVIDER_CLASSES)


class InterfaceContract:
    """What every provider kind promises without a network: capabilities and chat shapes."""

    kind = ""
    extra_config: dict = {}

    def model(self, scenario: str) -> str:
        raise NotImplementedError

    def provider(self, base_url: str, **options) -> Provider:
        config = ProviderConfig(
            kind=self.kind,
            base_url=base_url,
            api_key_env=PROVIDER_KEY_ENV,
            timeout_seconds=self.timeout_seconds,
            connect_timeout_seconds=1,
            **{**self.extra_config, **options},
        )
        return PROVIDER_CLASSES[self.kind]("contract", config)

    timeout_seconds = 0.5

    @pytest.fixture(autouse=True)
    def _provider_key(self, monkeypatch):
        monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)

    def test_capabilities_are_one_typed_object(self, upstream):
        assert isinstance(self.provider(upstream.base_url).capabilities, Capabilities)

    def test_a_call_without_its_capability_is_not_implemented(self, upstream):
        provider = self.provider(upstream.base_url)
        for name, capability in WIRE_CALLS.items():
            if capability is None or getattr(provider.capabilities, capability):
                continue
            with pytest.raises(NotImplementedError):
                getattr(provider, name)(*NATIVE_ARGUMENTS[name])

    def test_an_answer_is_a_chat_completion(self, upstream):
        answer = self.provider(upstream.base_url).chat(
            {"model": self.model("echo"), "messages": HELLO}
        )
        message = answer["choices"][0]["message"]
        assert message["role"] == "assistant" and isinstance(message["content"], str)
        assert answer["choices"][0]["finish_reason"] == "stop"
        assert isinstance(answer["usage"]["prompt_tokens"], int)

    def test_a_stream_is_chat_completion_chunks_ending_with_done(self, upstream):
        reply = self.provider(upstream.base_url).chat_stream(
            {
                "model": self.model("echo"),
                "messages": HELLO,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        )
        chunks = chunks_of(reply)
        text = "".join(
            c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]
        )
        assert text.strip()
        assert any(c["choices"] and c["choices"][0]["finish_reason"] == "stop" for c in chunks)
        assert any(c.get("usage") for c in chunks)


class ProviderContract(InterfaceContract):
    """Mixed into one test class per provider kind that calls an upstream.

    A subclass names its ``kind``, gives an ``upstream`` fixture (a started test
    server for that protocol, with ``base_url``) and ``model(scenario)``: the
    model name that makes its server play ``echo``, ``tools``, ``fail-500``,
    ``fail-400``, ``hang``, ``retry-after`` (429 with ``Retry-After: 2``),
    ``leaks-key`` (the key it was sent, JSON-escaped, in its answers),
    ``drip`` (a plain answer sent a byte every 50 ms) or ``gzip`` (a plain
    answer, gzip-compressed: refused unless the provider accepts compressed answers).
    """

    timeout_seconds = 0.5  # the ``hang`` scenario waits this long, twice at most

    def test_a_compressed_answer_is_refused_unless_the_provider_accepts_them(self, upstream):
        # The router asks for identity: a gzip bomb of a few KB decodes to gigabytes.
        with pytest.raises(ProviderError) as caught:
            self.provider(upstream.base_url).chat({"model": self.model("gzip"), "messages": HELLO})
        assert caught.value.kind == "malformed" and "gzip" in caught.value.message

    def test_a_compressed_answer_is_decoded_when_the_provider_accepts_them(self, upstream):
        answer = self.provider(upstream.base_url, accept_compressed=True).chat(
            {"model": self.model("gzip"), "messages": HELLO}
        )
        assert answer["choices"][0]["message"]["content"]

    def test_a_plain_answer_over_max_answer_bytes_is_refused(self, upstream):
        with pytest.raises(ProviderError) as caught:
            self.provider(upstream.base_url, max_answer_bytes=64).chat(
                {"model": self.model("echo"), "messages": HELLO}
            )
        assert caught.value.kind == "malformed" and "max_answer_bytes" in caught.value.message

    def test_a_tool_call_comes_back_as_tool_calls(self, upstream):
        answer = self.provider(upstream.base_url).chat(
            {"model": self.model("tools"), "messages": HELLO, "tools": TOOLS}
        )
        choice = answer["choices"][0]
        assert choice["finish_reason"] == "tool_calls"
        call = choice["message"]["tool_calls"][0]
        assert call["function"]["name"] == "read_file" and call["id"]
        json.loads(call["function"]["arguments"])

    def test_a_refused_connection_is_a_retryable_connect_error(self):
        with refused_port() as port:
            provider = self.provider(f"http://127.0.0.1:{port}/v1")
            with pytest.raises(ProviderError) as failed:
                provider.chat({"model": self.model("echo"), "messages": HELLO})
        assert failed.value.kind == "connect" and failed.value.retryable

    def test_a_server_error_is_retryable_and_a_client_error_is_not(self, upstream):
        provider = self.provider(upstream.base_url)
        with pytest.raises(ProviderError) as server_error:
            provider.chat({"model": self.model("fail-500"), "messages": HELLO})
        with pytest.raises(ProviderError) as client_error:
            provider.chat({"model": self.model("fail-400"), "messages": HELLO})
        assert (server_error.value.kind, server_error.value.status) == ("status", 500)
        assert server_error.value.retryable
        assert (client_error.value.kind, client_error.value.status) == ("status", 400)
        assert not client_error.value.retryable

    def test_an_upstream_that_never_answers_is_a_timeout(self, upstream):
        with pytest.raises(ProviderError) as failed:
            self.provider(upstream.base_url).chat({"model": self.model("hang"), "messages": HELLO})
        assert failed.value.kind == "timeout" and failed.value.retryable

    def test_the_key_goes_upstream_and_never_into_an_error(self, upstream):
        with pytest.raises(ProviderError) as failed:
            self.provider(upstream.base_url).chat(
                {"model": self.model("fail-400"), "messages": HELLO}
            )
        assert PROVIDER_KEY not in failed.value.message
        assert PROVIDER_KEY in json.dumps(upstream.received[-1]["headers"])

    def test_an_unset_key_variable_is_unconfigured_and_nothing_is_sent(self, upstream, monkeypatch):
        monkeypatch.delenv(PROVIDER_KEY_ENV)
        provider = self.provider(upstream.base_url)
        for call in (provider.chat, provider.chat_stream):
            with pytest.raises(ProviderError) as failed:
                call({"model": self.model("echo"), "messages": HELLO, "stream": True})
            # Not worth a second try on the same model; the next candidate may answer.
            assert failed.value.kind == "unconfigured" and not failed.value.retryable
            assert failed.value.next_model_may_help
            assert PROVIDER_KEY_ENV in failed.value.message
        assert upstream.received == []

    def test_a_retry_after_comes_with_the_error(self, upstream):
        with pytest.raises(ProviderError) as failed:
            self.provider(upstream.base_url).chat(
                {"model": self.model("retry-after"), "messages": HELLO}
            )
        assert (failed.value.status, failed.value.retry_after) == (429, 2.0)

    def test_a_key_echoed_in_any_spelling_is_redacted_from_answers_and_streams(self, upstream):
        provider = self.provider(upstream.base_url)
        answer = provider.chat({"model": self.model("leaks-key"), "messages": HELLO})
        reply = provider.chat_stream(
            {"model": self.model("leaks-key"), "messages": HELLO, "stream": True}
        )
        relayed = [json.dumps(answer, ensure_ascii=False)] + [
            json.dumps(chunk, ensure_ascii=False) for chunk in chunks_of(reply)
        ]
        assert all(PROVIDER_KEY not in text for text in relayed)
        assert "[redacted]" in relayed[0]

    def test_an_answer_dripped_past_the_deadline_is_a_timeout(self, upstream):
        with pytest.raises(ProviderError) as failed:
            self.provider(upstream.base_url).chat({"model": self.model("drip"), "messages": HELLO})
        assert failed.value.kind == "timeout"


class TestOpenAICompatibleProvider(ProviderContract):
    kind = "openai"
    SCENARIOS = {
        "echo": "echo-contract",
        "tools": "echo-contract",  # the OpenAI test upstream calls the first tool offered
        "fail-500": "fail-500-99-contract",
        "fail-400": "fail-400-99-contract",
        "hang": "hang-contract",
        "retry-after": "ra-2-99-contract",
        "leaks-key": "leaks-key-contract",
        "drip": "drip-contract",
        "gzip": "gzip-contract",
    }

    def model(self, scenario: str) -> str:
        return self.SCENARIOS[scenario]

    @pytest.fixture
    def upstream(self):
        server = UpstreamServer().start()
        yield server
        server.stop()


class TestAnthropicProvider(ProviderContract):
    kind = "anthropic"
    SCENARIOS = {
        "echo": "claude-contract",
        "tools": "claude-contract",  # the Anthropic fake calls the first tool offered
        "fail-500": "claude-fail-500-99-contract",
        "fail-400": "claude-fail-400-99-contract",
        "hang": "claude-hang-contract",
        "retry-after": "claude-fail-429-99-ra2-contract",
        "leaks-key": "claude-leaks-key-contract",
        "drip": "claude-drip-contract",
        "gzip": "claude-gzip-contract",
    }

    def model(self, scenario: str) -> str:
        return self.SCENARIOS[scenario]

    @pytest.fixture
    def upstream(self):
        server = AnthropicServer().start()
        yield server
        server.stop()
        assert server.protocol_errors == []


def _events(reply) -> list[dict]:
    """The JSON of each event of a native stream (Messages, Responses)."""
    events = [event.sse() for event in reply.events]
    reply.close()
    return [
        json.loads(line[len(b"data:") :])
        for event in events
        for line in event.split(b"\n")
        if line.startswith(b"data:")
    ]


class TestOpenAIResponsesNative(TestOpenAICompatibleProvider):
    """``responses_api: true``: the same chat contract, and the Responses API as sent."""

    extra_config = {"responses_api": True}

    def test_a_responses_body_is_answered_as_a_response(self, upstream):
        provider = self.provider(upstream.base_url)
        assert provider.capabilities.responses
        answer = provider.responses({"model": self.model("echo"), "input": "hello"})
        assert answer["object"] == "response" and isinstance(answer["output"], list)

    def test_a_responses_stream_ends_with_response_completed(self, upstream):
        reply = self.provider(upstream.base_url).responses_stream(
            {"model": self.model("echo"), "input": "hello", "stream": True}
        )
        assert _events(reply)[-1]["type"] == "response.completed"


class TestAnthropicNative:
    """The Anthropic provider's Messages calls, as a /v1/messages client sent its body."""

    @pytest.fixture
    def provider(self, monkeypatch):
        monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
        server = AnthropicServer().start()
        config = ProviderConfig(
            kind="anthropic", base_url=server.base_url, api_key_env=PROVIDER_KEY_ENV
        )
        yield PROVIDER_CLASSES["anthropic"]("contract", config)
        server.stop()
        assert server.protocol_errors == []

    def request(self, **extra) -> MessagesRequest:
        turn = {"role": "user", "content": [{"type": "text", "text": "hello"}]}
        body = {"model": "claude-contract", "max_tokens": 64, "messages": [turn], **extra}
        return MessagesRequest(body, [("messages", 0, 0)])

    def test_a_messages_request_is_answered_as_a_message(self, provider):
        assert provider.capabilities.messages
        message = provider.messages(self.request(), None, {})
        assert message["type"] == "message" and message["content"]

    def test_a_messages_stream_ends_with_message_stop(self, provider):
        reply = provider.messages_stream(self.request(stream=True), None, {})
        kinds = [event["type"] for event in _events(reply)]
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"

    def test_count_tokens_answers_input_tokens(self, provider):
        body = {"model": "claude-contract", "messages": HELLO}
        assert isinstance(provider.count_tokens(body, {})["input_tokens"], int)


class TestDemo(InterfaceContract):
    """The demo provider calls nothing: it holds to the interface, and cannot fail."""

    kind = "demo"

    def model(self, scenario: str) -> str:
        return "demo"

    @pytest.fixture
    def upstream(self):
        class Nowhere:
            base_url = "http://127.0.0.1:9/v1"

        return Nowhere()
