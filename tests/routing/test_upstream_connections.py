"""The router's HTTP client against upstreams that misbehave the way real servers do.

routing/providers/connections.py pools kept-alive connections and
routing/providers/framing.py reads answers; these hold it to what a user relies on: a connection the
upstream closed is never the cause of a failed request, a connection left
mid-answer is never used again, every framing HTTP/1.1 allows reads the same
answer, a head that is not HTTP is a connect error (never a crash), and TLS is
verified.
"""

import gzip
import json
import threading
import zlib

import certifi
import pytest
from hypothesis import given
from hypothesis import strategies as st

from routing.config import ProviderConfig
from routing.errors import ProviderError
from routing.providers import connections, framing
from routing.providers.openai import OpenAICompatibleProvider
from tests.support.openai_upstream import UpstreamServer
from tests.support.raw_upstream import RawUpstream, completion_bytes, with_length
from tests.support.tls import CA_FILE

HELLO = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture
def raw_upstream():
    servers = []

    def start(answer, tls=False):
        server = RawUpstream(answer, tls=tls).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def provider_for(server, **config) -> OpenAICompatibleProvider:
    settings = {"timeout_seconds": 5, **config}
    return OpenAICompatibleProvider("raw", ProviderConfig(base_url=server.url, **settings))


def content(answer: dict) -> str:
    return answer["choices"][0]["message"]["content"]


def test_a_connection_the_upstream_closed_while_idle_is_not_used(raw_upstream):
    # Answers, then closes without saying so (no "Connection: close"), like an idle timeout.
    server = raw_upstream(lambda conn, req: (with_length(completion_bytes()), True))
    provider = provider_for(server)
    for _ in range(3):
        assert content(provider.chat(HELLO)) == "hi"
    assert server.connections == 3
    assert len(server.received) == 3  # no request sent twice


def test_a_request_on_a_kept_alive_connection_closed_before_its_answer_is_sent_again_once(
    raw_upstream,
):
    def answer(conn, req):
        if conn == 0 and req == 1:
            return None, True  # took the request, closed without a byte: the idle timeout's race
        return with_length(completion_bytes(f"{conn}.{req}")), False

    server = raw_upstream(answer)
    provider = provider_for(server)
    assert content(provider.chat(HELLO)) == "0.0"
    assert content(provider.chat(HELLO)) == "1.0"
    assert [(c, r) for c, r, _ in server.received] == [(0, 0), (0, 1), (1, 0)]


def test_a_fresh_connection_closed_before_its_answer_is_a_connect_error_sent_once(raw_upstream):
    server = raw_upstream(lambda conn, req: (None, True))
    with pytest.raises(ProviderError) as caught:
        provider_for(server).chat(HELLO)
    assert caught.value.kind == "connect" and caught.value.retryable
    assert len(server.received) == 1  # the dispatcher retries; the client does not


def test_an_answer_cut_mid_body_is_a_connect_error_and_its_connection_is_not_reused(
    raw_upstream,
):
    def answer(conn, req):
        if conn == 0:
            return with_length(completion_bytes())[:-20], True
        return with_length(completion_bytes()), False

    server = raw_upstream(answer)
    provider = provider_for(server)
    with pytest.raises(ProviderError) as caught:
        provider.chat(HELLO)
    assert caught.value.kind == "connect"
    assert content(provider.chat(HELLO)) == "hi"
    assert server.connections == 2


def chunked_head(content_type: bytes) -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type + b"\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )


def chunked(*pieces: bytes) -> list[bytes]:
    """An answer's head and a body cut into chunks, with an extension and a trailer."""
    head = chunked_head(b"application/json")
    body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in pieces)
    return [head, body[:7], body[7:], b"0\r\nX-Trailer: yes\r\n\r\n"]


BODY = completion_bytes("framed")

FRAMINGS = {
    "content-length": ([with_length(BODY)], True),
    "content-length, head and body apart": ([with_length(BODY)[:40], with_length(BODY)[40:]], True),
    "chunked, cut anywhere": (chunked(BODY[:10], BODY[10:11], BODY[11:]), True),
    "HTTP/1.0, read to the close": (
        [b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY],
        False,
    ),
    "content-length, Connection: close": (
        [with_length(BODY, extra=b"Connection: close\r\n")],
        False,
    ),
    "a 100 Continue first": ([b"HTTP/1.1 100 Continue\r\n\r\n", with_length(BODY)], True),
    "bare newlines": ([with_length(BODY).replace(b"\r\n", b"\n")], True),
}


@pytest.mark.parametrize("framing", FRAMINGS)
def test_every_framing_reads_the_same_answer_and_only_a_framed_one_keeps_its_connection(
    raw_upstream, framing
):
    pieces, kept = FRAMINGS[framing]
    server = raw_upstream(lambda conn, req: (pieces, not kept))
    provider = provider_for(server)
    assert content(provider.chat(HELLO)) == "framed"
    assert content(provider.chat(HELLO)) == "framed"
    assert server.connections == (1 if kept else 2)


def sse(*events: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


CHUNK = {
    "id": "c",
    "object": "chat.completion.chunk",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}],
}


def test_a_stream_cut_mid_chunk_is_a_connect_error_mid_answer(raw_upstream):
    events = sse(CHUNK)
    head = chunked_head(b"text/event-stream")
    cut = b"%x\r\n%s" % (len(events) + 50, events)  # says 50 bytes more than it sends
    server = raw_upstream(lambda conn, req: ([head, cut], True))
    reply = provider_for(server).chat_stream({**HELLO, "stream": True})
    with pytest.raises(ProviderError) as caught:
        list(reply.events)
    assert caught.value.kind == "connect" and "mid-answer" in caught.value.message


def test_a_stream_left_before_its_end_never_goes_back_to_the_pool(raw_upstream):
    events = sse(CHUNK, CHUNK) + b"data: [DONE]\n\n"
    head = chunked_head(b"text/event-stream")
    body = b"%x\r\n%s\r\n" % (len(events), events)
    # The final zero chunk comes late: the reader stops at [DONE] before it.
    server = raw_upstream(lambda conn, req: ([head, body, b"0\r\n\r\n"], False))
    provider = provider_for(server)
    reply = provider.chat_stream({**HELLO, "stream": True})
    next(iter(reply.events))
    reply.close()
    reply = provider.chat_stream({**HELLO, "stream": True})
    assert [e.done for e in reply.events][-1]
    reply.close()
    assert server.connections == 2


def test_a_stream_whose_end_came_with_its_last_event_keeps_its_connection(raw_upstream):
    events = sse(CHUNK) + b"data: [DONE]\n\n"
    answer = chunked_head(b"text/event-stream") + b"%x\r\n%s\r\n0\r\n\r\n" % (len(events), events)
    server = raw_upstream(lambda conn, req: (answer, False))
    provider = provider_for(server)
    for _ in range(3):
        reply = provider.chat_stream({**HELLO, "stream": True})
        assert any(event.done for event in reply.events)  # stops at [DONE], as the relay does
        reply.close()
    assert server.connections == 1


def test_a_head_that_is_not_http_is_a_connect_error(raw_upstream):
    server = raw_upstream(lambda conn, req: (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", True))
    with pytest.raises(ProviderError) as caught:
        provider_for(server).chat(HELLO)
    assert caught.value.kind == "connect"


def test_a_head_that_never_ends_is_refused_at_its_limit(raw_upstream):
    endless = b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"a" * (2 * framing.MAX_HEAD_BYTES)
    server = raw_upstream(lambda conn, req: (endless, False))
    with pytest.raises(ProviderError) as caught:
        provider_for(server).chat(HELLO)
    assert caught.value.kind == "connect"


def test_a_head_dripped_a_byte_at_a_time_is_cut_at_the_deadline(raw_upstream):
    answer = with_length(BODY)
    server = raw_upstream(lambda conn, req: ([answer[i : i + 1] for i in range(len(answer))], True))
    with pytest.raises(ProviderError) as caught:
        provider_for(server, timeout_seconds=0.3).chat(HELLO)
    assert caught.value.kind == "timeout"


def test_conflicting_content_lengths_are_refused(raw_upstream):
    answer = with_length(BODY, extra=b"Content-Length: 3\r\n")
    server = raw_upstream(lambda conn, req: (answer, False))
    with pytest.raises(ProviderError) as caught:
        provider_for(server).chat(HELLO)
    assert caught.value.kind == "connect"


@pytest.mark.parametrize(
    "encoding, compress",
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda data: zlib.compress(data, wbits=-zlib.MAX_WBITS)),
    ],
)
def test_a_compressed_answer_is_decoded_in_either_deflate_spelling(
    raw_upstream, encoding, compress
):
    packed = compress(BODY)
    answer = with_length(packed, extra=f"Content-Encoding: {encoding}\r\n".encode())
    server = raw_upstream(lambda conn, req: (answer, False))
    assert content(provider_for(server, accept_compressed=True).chat(HELLO)) == "framed"


def test_a_body_that_does_not_decode_as_it_says_is_malformed(raw_upstream):
    answer = with_length(b"not gzip at all", extra=b"Content-Encoding: gzip\r\n")
    server = raw_upstream(lambda conn, req: (answer, False))
    with pytest.raises(ProviderError) as caught:
        provider_for(server, accept_compressed=True).chat(HELLO)
    assert caught.value.kind == "malformed"


def test_a_tls_upstream_no_ca_vouches_for_is_refused(raw_upstream):
    server = raw_upstream(lambda conn, req: (with_length(BODY), False), tls=True)
    with pytest.raises(ProviderError) as caught:
        provider_for(server).chat(HELLO)
    assert caught.value.kind == "connect"
    assert not server.received  # nothing was sent to it


@pytest.fixture
def trusted_test_ca(monkeypatch):
    """The test CA in the place of certifi's bundle (the one thing patched: a third party)."""
    monkeypatch.setattr(certifi, "where", lambda: CA_FILE)
    monkeypatch.setattr(connections, "_context", None)
    yield
    connections._context = None


def test_a_tls_upstream_is_answered_when_its_ca_is_trusted(raw_upstream, trusted_test_ca):
    server = raw_upstream(lambda conn, req: (with_length(BODY), False), tls=True)
    provider = provider_for(server)
    assert content(provider.chat(HELLO)) == "framed"
    assert content(provider.chat(HELLO)) == "framed"
    assert server.connections == 1
    assert b"Host: 127.0.0.1:%d" % server.port in server.received[0][2]


def test_a_tls_certificate_for_another_name_is_refused(raw_upstream, trusted_test_ca):
    server = raw_upstream(lambda conn, req: (with_length(BODY), False), tls=True)
    # The certificate names 127.0.0.1 only.
    config = ProviderConfig(base_url=f"https://localhost:{server.port}/v1", timeout_seconds=5)
    with pytest.raises(ProviderError) as caught:
        OpenAICompatibleProvider("raw", config).chat(HELLO)
    assert caught.value.kind == "connect"


def test_threads_share_the_pool_without_mixing_answers():
    upstream = UpstreamServer().start()
    try:
        provider = OpenAICompatibleProvider("up", ProviderConfig(base_url=upstream.base_url))
        failures = []

        def calls():
            try:
                for _ in range(10):
                    assert provider.chat(HELLO)["choices"]
            except Exception as error:  # noqa: BLE001 - collected, asserted below
                failures.append(error)

        threads = [threading.Thread(target=calls) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failures
        assert len(upstream.received) == 160
        assert len({r["client"] for r in upstream.received}) <= 16
    finally:
        upstream.stop()


HEADER_NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1)
HEADER_VALUE = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0xFF, exclude_characters=","),
    max_size=30,
)


@given(st.integers(200, 599), st.dictionaries(HEADER_NAME, HEADER_VALUE, max_size=20))
def test_a_well_formed_head_reads_back_as_written(status, headers):
    by_name = {}
    for name, value in headers.items():
        by_name.setdefault(name.lower(), []).append(value)
    head = f"HTTP/1.1 {status} Whatever\r\n" + "".join(f"{n}: {v}\r\n" for n, v in headers.items())
    parsed = framing.parse_head(head.encode("latin-1"))
    assert parsed == (status, True, {n: ", ".join(v) for n, v in by_name.items()})


@given(st.binary(max_size=400))
def test_a_hostile_head_is_read_or_refused_never_a_crash(head):
    try:
        status, keep, headers = framing.parse_head(head)
    except framing.BrokenAnswer:
        return
    assert 100 <= status <= 999 and isinstance(keep, bool)
    assert all(name == name.lower() for name in headers)
