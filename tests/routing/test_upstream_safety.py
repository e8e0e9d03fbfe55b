"""What a hostile or broken upstream cannot do: leak the key, pass garbage off as a stream,
hold a thread past its deadline, or be hammered by instant retries."""

import json
import logging
import socket
import time

import pytest
import requests

from routing.dispatch.attempts import BACKOFF_BASE_SECONDS, retry_pause
from routing.errors import ProviderError
from routing.models import RouteDecision
from routing.protocols.base import Event
from routing.providers.redact import Redactor
from tests.support.config import PROVIDER_KEY

pytestmark = pytest.mark.django_db(transaction=True)

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def with_models(router_config, write_config):
    """with_models(*upstream_names, **provider_changes): pinned models of those names on 'up'."""

    def add(*names, **provider):
        for name in names:
            router_config["models"].append(
                {"id": name, "provider": "up", "tier": "medium", "context_window": 32768}
            )
        router_config["providers"]["up"].update(provider)
        write_config(router_config)

    return add


@pytest.fixture
def post(live_server, api_key):
    def send(model, stream=False):
        return requests.post(
            live_server.url + "/v1/chat/completions",
            json={"model": model, "messages": HI, "stream": stream},
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=30,
        )

    return send


def decoded(text: str) -> str:
    """Every JSON document in ``text`` (a body, or each SSE data line) decoded, escapes undone."""
    documents = []
    for line in text.splitlines() or [text]:
        payload = line.removeprefix("data: ")
        try:
            documents.append(json.dumps(json.loads(payload), ensure_ascii=False))
        except ValueError:
            documents.append(line)
    return "\n".join(documents)


def assert_no_key(*texts):
    for text in texts:
        assert PROVIDER_KEY not in text
        assert PROVIDER_KEY not in decoded(text)


# --- Secrets ---


@pytest.mark.parametrize("stream", [False, True])
def test_a_key_echoed_in_any_json_spelling_never_reaches_client_row_or_log(
    post, with_models, stream, caplog
):
    with_models("leaks-key")
    caplog.set_level(logging.INFO)

    response = post("leaks-key", stream=stream)

    assert response.status_code == 200
    assert decoded(response.text).count("[redacted]") >= 3
    row = RouteDecision.objects.get()
    assert row.status_code == 200
    assert_no_key(response.text, row.error, json.dumps(row.attempts), caplog.text)


def test_a_key_echoed_in_an_error_is_redacted_after_decoding(post, with_models, caplog):
    with_models("leaks-key-401")

    response = post("leaks-key-401")

    # The provider refused the router's key: the operator's to fix, final (not a 401, not a 5xx).
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "provider_key_rejected"
    assert response.json()["error"]["message"].count("[redacted]") == 3
    assert_no_key(response.text, RouteDecision.objects.get().error, caplog.text)


def test_a_stream_request_refused_with_the_key_is_redacted_too(post, with_models):
    with_models("leaks-key-401")

    response = post("leaks-key-401", stream=True)

    assert response.status_code == 400
    assert_no_key(response.text, RouteDecision.objects.get().error)


def redacted(raw: bytes) -> bytes:
    """A stream event as the provider relays it, the key redacted."""
    return Redactor([PROVIDER_KEY]).event(Event.parse(raw), raw).sse()


@pytest.mark.parametrize(
    "raw, clean",
    [
        (b'{"a": "x sk-provider-secret-123 y"}', {"a": "x [redacted] y"}),
        (b'{"\\u0073k-provider-secret-123": 1}', {"[redacted]": 1}),
        (b'{"a": ["sk-provider-secret-12\\u0033"]}', {"a": ["[redacted]"]}),
    ],
)
def test_the_redactor_decodes_before_it_searches(raw, clean):
    assert json.loads(redacted(b"data: " + raw)[len(b"data: ") :]) == clean


def test_the_redactor_searches_what_is_not_json_as_bytes():
    assert redacted(b": not json sk-provider-secret-123") == b": not json [redacted]"


def test_the_redactor_leaves_a_clean_event_byte_for_byte():
    raw = b'data: {"b": "line\\nbreak", "a": "\\u00e9"}'
    assert redacted(raw) is raw


# --- Streams that are not SSE ---


def test_a_stream_that_is_not_sse_gets_502_before_it_starts_and_a_502_row(post, with_models):
    with_models("notsse")

    response = post("notsse", stream=True)

    assert response.status_code == 502
    assert response.json()["error"]["message"]
    row = RouteDecision.objects.get()
    assert row.status_code == 502
    assert len(row.attempts) == 1  # malformed: not retried


def test_garbage_mid_stream_ends_with_a_clean_error_event_and_a_failed_row(post, with_models):
    with_models("badjson")

    response = post("badjson", stream=True)

    assert response.status_code == 200  # the stream had started
    events = [line for line in response.text.splitlines() if line.startswith("data: ")]
    assert json.loads(events[0][6:])["choices"][0]["delta"]["content"] == "Hi"
    last = json.loads(events[-1][6:])
    assert last["error"]["code"] == "upstream_stream_broken"
    assert "{this is not json" not in response.text
    row = RouteDecision.objects.get()
    assert row.status_code == 502
    assert "not JSON" in row.error


def test_an_error_event_from_the_upstream_is_relayed_and_the_row_says_502(post, with_models):
    with_models("errorevent")

    response = post("errorevent", stream=True)

    assert '"overloaded"' in response.text
    row = RouteDecision.objects.get()
    assert (row.status_code, row.error) == (502, "upstream error event: overloaded")


def test_a_stream_the_client_walks_away_from_is_recorded_as_499(
    live_server, api_key, router_config, upstream
):
    body = json.dumps({"model": "slow-stream", "messages": HI, "stream": True}).encode()
    host, port = live_server.thread.host, live_server.thread.port
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
            + b"Content-Type: application/json\r\n"
            + f"Authorization: Bearer {api_key}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        received = b""
        while b"data: " not in received:  # the first event arrived; now hang up
            received += sock.recv(65536)
    upstream.release.set()

    for _ in range(100):
        row = RouteDecision.objects.first()  # written once the relay has ended
        if row is not None and row.status_code is not None:
            break
        time.sleep(0.05)
    assert (row.status_code, row.error) == (499, "client disconnected")


# --- Deadlines ---


def test_an_upstream_that_drips_its_answer_is_cut_at_the_deadline(post, with_models):
    # Every single read succeeds (a byte every 50 ms); only the total deadline can stop it.
    with_models("drip", timeout_seconds=0.5)

    response = post("drip")

    assert response.status_code == 504
    assert "within 0.5s" in response.json()["error"]["message"]
    row = RouteDecision.objects.get()
    assert row.status_code == 504
    assert [a["result"] for a in row.attempts] == ["timeout", "timeout"]


def test_a_stream_that_stalls_mid_answer_ends_at_the_idle_limit_with_a_504_row(post, with_models):
    with_models("stall", stream_idle_seconds=0.5)

    response = post("stall", stream=True)

    last = json.loads(response.text.strip().splitlines()[-1][6:])
    assert last["error"]["code"] == "upstream_stream_broken"
    assert "no event for 0.5s" in last["error"]["message"]
    assert RouteDecision.objects.get().status_code == 504


# --- Retries ---


def test_retry_pauses_are_jittered_and_bounded():
    error = ProviderError("status", "x", 503)
    pauses = [retry_pause(error, 1) for _ in range(200)]
    assert all(0 <= p <= BACKOFF_BASE_SECONDS for p in pauses)
    assert len(set(pauses)) > 100


@pytest.mark.parametrize("retry_after, pause", [(2.0, 2.0), (0.0, 0.0), (60.0, None)])
def test_a_short_retry_after_is_honoured_and_a_long_one_moves_on(retry_after, pause):
    assert retry_pause(ProviderError("status", "x", 429, retry_after=retry_after), 1) == pause


def test_the_retry_waits_for_the_upstreams_retry_after(post, with_models, upstream):
    with_models("ra-1-1")

    assert post("ra-1-1").status_code == 200

    first, second = upstream.received
    assert second["at"] - first["at"] >= 1.0


def test_a_long_retry_after_is_relayed_without_retrying_the_same_model(post, with_models, upstream):
    with_models("ra-60-5")

    response = post("ra-60-5")

    assert response.status_code == 429
    assert len(upstream.received) == 1


def test_a_retry_after_of_days_is_relayed_capped(post, with_models):
    with_models("ra-999999-5")

    response = post("ra-999999-5")

    assert response.status_code == 429
    assert response.headers["Retry-After"] == "60"


# --- Odd answers ---


@pytest.mark.parametrize("status", [301, 307])
def test_a_redirect_is_a_502_naming_it_never_a_3xx(post, with_models, status):
    with_models(f"redirect-{status}")

    response = post(f"redirect-{status}")

    assert response.status_code == 502
    message = response.json()["error"]["message"]
    assert f"redirect (HTTP {status} to http://127.0.0.1:9/elsewhere)" in message
    assert RouteDecision.objects.get().status_code == 502


@pytest.mark.parametrize("model", ["oddusage", "hugeusage"])
@pytest.mark.parametrize("stream", [False, True])
def test_usage_of_any_shape_is_recorded_as_unknown(post, with_models, model, stream):
    with_models(model)

    response = post(model, stream=stream)

    assert response.status_code == 200
    row = RouteDecision.objects.get()
    assert row.status_code == 200
    assert row.prompt_tokens is None or 0 <= row.prompt_tokens < 2**31
    assert row.completion_tokens is None or 0 <= row.completion_tokens < 2**31


# --- The whole request's deadline ---


def test_every_candidate_and_try_share_the_request_deadline(
    post, with_models, router_config, write_config
):
    with_models("hang-deadline", timeout_seconds=3)
    router_config["routing"] = {"request_deadline_seconds": 0.5}
    write_config(router_config)

    response = post("hang-deadline")

    assert response.status_code == 504
    message = response.json()["error"]["message"]
    assert "sent nothing for 0.5s" in message  # the first try was cut to the deadline
    assert "routing.request_deadline_seconds" in message  # and no second one began
    row = RouteDecision.objects.get()
    assert [a["result"] for a in row.attempts] == ["timeout", "timeout"]
    assert row.attempts[-1]["model"] == "router"
