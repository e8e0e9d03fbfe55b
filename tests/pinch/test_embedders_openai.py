"""The OpenAI-compatible embedder against a real HTTP server on 127.0.0.1.

No mocks: ``EmbeddingServer`` is a ``http.server`` in a thread, on a port the
OS picks, that answers ``POST /v1/embeddings`` the way a healthy endpoint does
or, on request, the way a broken one does. The relevance edge's failure-path
tests reuse it.
"""

from __future__ import annotations

import numpy as np
import pytest

from pinch.embedders import EmbeddingError, OpenAIEmbedder
from tests.support.embedding_server import DIM, EmbeddingServer, toy_vector


@pytest.fixture
def server():
    with EmbeddingServer() as s:
        yield s


def embedder_for(server: EmbeddingServer, **kw) -> OpenAIEmbedder:
    kw.setdefault("timeout_seconds", 2.0)
    return OpenAIEmbedder(base_url=server.base_url, model="nomic-embed-text", **kw)


def test_it_sends_the_whole_batch_in_one_request(server):
    texts = ["the query", "first result", "second result", "third result"]
    vectors = embedder_for(server).embed(texts)

    assert vectors.shape == (4, DIM)
    assert vectors.dtype == np.float32
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request["path"] == "/v1/embeddings"
    assert request["body"] == {"model": "nomic-embed-text", "input": texts}
    np.testing.assert_array_equal(vectors[2], np.array(toy_vector("second result")))


def test_it_sends_the_key_from_the_named_environment_variable(server, monkeypatch):
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-test-123")
    embedder_for(server, api_key_env="TEST_EMBED_KEY").embed(["a", "b"])
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-test-123"


def test_it_sends_no_authorization_without_api_key_env(server):
    embedder_for(server).embed(["a"])
    assert "Authorization" not in server.requests[0]["headers"]


def test_it_refuses_to_call_when_the_named_key_variable_is_unset(server, monkeypatch):
    monkeypatch.delenv("TEST_EMBED_KEY", raising=False)
    with pytest.raises(EmbeddingError, match="TEST_EMBED_KEY is not set"):
        embedder_for(server, api_key_env="TEST_EMBED_KEY").embed(["a"])
    assert server.requests == []


def test_it_puts_rows_back_in_input_order_by_index(server):
    server.mode = "shuffled"
    texts = ["alpha beta", "gamma", "delta epsilon zeta"]
    vectors = embedder_for(server).embed(texts)
    for row, text in zip(vectors, texts):
        np.testing.assert_array_equal(row, np.array(toy_vector(text)))


def test_empty_texts_are_sent_as_a_space(server):
    embedder_for(server).embed(["query", ""])
    assert server.requests[0]["body"]["input"] == ["query", " "]


def test_an_empty_batch_makes_no_request(server):
    assert embedder_for(server).featurize([]) == []
    assert server.requests == []


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("status_500", "HTTP 500"),
        ("status_401", "HTTP 401"),
        ("not_json", "not JSON"),
        ("no_data", "not JSON with a 'data' list"),
        ("wrong_count", "got 2 vectors for 3 inputs"),
        ("nan", "NaN"),
        ("mixed_dims", "mismatched dimensions"),
        ("duplicate_index", "appears twice"),
        ("strings", "numbers"),
    ],
)
def test_each_bad_answer_is_an_embedding_error(server, mode, message):
    server.mode = mode
    with pytest.raises(EmbeddingError, match=message):
        embedder_for(server).embed(["q", "a", "b"])


def test_a_slow_server_is_a_timeout(server):
    server.mode = "slow"
    server.delay = 5.0
    with pytest.raises(EmbeddingError, match="timed out"):
        embedder_for(server, timeout_seconds=0.2).embed(["q", "a"])
    assert not server.answered.is_set(), "the embedder waited for the slow answer"


def test_a_closed_port_is_a_connection_error():
    with EmbeddingServer() as s:
        url = s.base_url
    embedder = OpenAIEmbedder(base_url=url, model="m", timeout_seconds=1.0)
    with pytest.raises(EmbeddingError, match="cannot connect"):
        embedder.embed(["q"])


def test_credentials_in_base_url_stay_out_of_errors():
    with EmbeddingServer() as s:
        port = s.httpd.server_address[1]
    embedder = OpenAIEmbedder(
        base_url=f"http://user:hunter2@127.0.0.1:{port}/v1", model="m", timeout_seconds=1.0
    )
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed(["q"])
    assert "hunter2" not in str(caught.value)
    assert f"127.0.0.1:{port}/v1/embeddings" in str(caught.value)


def test_the_error_never_contains_the_key(server, monkeypatch):
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-very-secret")
    server.mode = "status_401"
    with pytest.raises(EmbeddingError) as caught:
        embedder_for(server, api_key_env="TEST_EMBED_KEY").embed(["q"])
    assert "sk-very-secret" not in str(caught.value)


def test_a_key_the_server_echoes_is_redacted(server, monkeypatch):
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-echo-me")
    server.mode = "echo_key"
    with pytest.raises(EmbeddingError) as caught:
        embedder_for(server, api_key_env="TEST_EMBED_KEY").embed(["q"])
    assert "sk-echo-me" not in str(caught.value)
    assert "Bearer [redacted]" in str(caught.value)


def test_identity_names_the_endpoint_and_model(server):
    assert embedder_for(server).identity == f"openai:{server.base_url}/embeddings:nomic-embed-text"
