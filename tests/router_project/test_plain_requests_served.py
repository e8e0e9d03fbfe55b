"""Plain requests through gunicorn with the router's worker, served by its lean exchange
(router_project/lean_http.py): kept alive, streamed, HTTP/1.0, closed on request, and logged
with gunicorn's own access line."""

import json
import re
import socket

import pytest

from tests.support.config import base_config
from tests.support.served import gunicorn_router, prepare, router_env

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def served(tmp_path_factory, module_upstream):
    env = router_env(
        tmp_path_factory.mktemp("served"),
        base_config(module_upstream.base_url),
        ROUTER_ACCESS_LOG="-",
    )
    with gunicorn_router(env, prepare(env)) as router:
        yield router


class Client:
    """One connection to the router, its answers read by their framing."""

    def __init__(self, router):
        self.router = router
        self.sock = socket.create_connection(("127.0.0.1", router.port), timeout=30)
        self.buffer = b""

    def close(self):
        self.sock.close()

    def send(self, method, path, version="HTTP/1.1", headers=(), body=b""):
        lines = [
            f"{method} {path} {version}",
            "Host: 127.0.0.1",
            f"Authorization: Bearer {self.router.key}",
            *headers,
        ]
        if body:
            lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    def _more(self) -> bool:
        data = self.sock.recv(65536)
        self.buffer += data
        return bool(data)

    def _until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            assert self._more(), f"the connection closed before {marker!r}: {self.buffer!r}"
        found, _, self.buffer = self.buffer.partition(marker)
        return found

    def head(self) -> tuple[str, dict]:
        lines = self._until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        return lines[0], {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:])}

    def body(self, headers) -> bytes:
        if "content-length" in headers:
            size = int(headers["content-length"])
            while len(self.buffer) < size:
                assert self._more()
            body, self.buffer = self.buffer[:size], self.buffer[size:]
            return body
        assert headers.get("transfer-encoding") == "chunked"
        return b"".join(iter(self.chunk, b""))

    def chunk(self) -> bytes:
        size = int(self._until(b"\r\n"), 16)
        while len(self.buffer) < size + 2:
            assert self._more()
        data, self.buffer = self.buffer[:size], self.buffer[size + 2 :]
        return data

    def closed_by_the_router(self) -> bool:
        return not self.buffer and not self._more()


def test_requests_on_a_kept_alive_connection_are_each_answered_on_it(served):
    client = Client(served)
    try:
        for _ in range(3):
            client.send("GET", "/v1/models")
            status, headers = client.head()
            assert status == "HTTP/1.1 200 OK"
            assert headers["connection"] == "keep-alive"
            assert json.loads(client.body(headers))["data"]
        body = json.dumps({"model": "echo-medium", "messages": HI}).encode()
        client.send("POST", "/v1/chat/completions", body=body)
        status, headers = client.head()
        assert status == "HTTP/1.1 200 OK"
        assert json.loads(client.body(headers))["choices"][0]["message"]["content"]
    finally:
        client.close()


def test_a_streamed_answer_goes_out_event_by_event(served, module_upstream):
    module_upstream.release.clear()
    client = Client(served)
    try:
        body = {"model": "slow-stream", "messages": HI, "stream": True}
        client.send("POST", "/v1/chat/completions", body=json.dumps(body).encode())
        status, headers = client.head()
        assert status == "HTTP/1.1 200 OK"
        assert headers["transfer-encoding"] == "chunked"
        assert client.chunk().startswith(b"data: ")  # before the upstream is let go on
        module_upstream.release.set()
        rest = b"".join(iter(client.chunk, b""))
        assert rest.rstrip().endswith(b"data: [DONE]")
        client.send("GET", "/v1/models")  # and the connection is kept
        assert client.head()[0] == "HTTP/1.1 200 OK"
    finally:
        module_upstream.release.set()
        client.close()


@pytest.mark.parametrize(
    "version, headers",
    [("HTTP/1.0", []), ("HTTP/1.1", ["Connection: close"])],
    ids=["http-1.0", "connection-close"],
)
def test_an_http_1_0_request_or_one_asking_to_close_gets_its_answer_and_the_connection_closed(
    served, version, headers
):
    client = Client(served)
    try:
        client.send("GET", "/v1/models", version=version, headers=headers)
        status, answer_headers = client.head()
        assert status == f"{version} 200 OK"
        assert answer_headers["connection"] == "close"
        assert json.loads(client.body(answer_headers))["data"]
        assert client.closed_by_the_router()
    finally:
        client.close()


def test_the_access_line_of_a_plain_request_is_the_one_gunicorns_way_writes(
    tmp_path, module_upstream
):
    env = router_env(tmp_path, base_config(module_upstream.base_url), ROUTER_ACCESS_LOG="-")
    with gunicorn_router(env, prepare(env)) as router:
        client = Client(router)
        try:
            agent = 'User-Agent: agent/1.0 "quoted"'
            # A plain request, then the same one with a header the lean parser leaves to gunicorn.
            for extra in ([], ["X-Note: caf\xe9"]):
                client.send("GET", "/v1/models?x=%41", headers=[agent, "Referer: r", *extra])
                _status, headers = client.head()
                client.body(headers)
        finally:
            client.close()
    output = router.process.stdout.read().decode("latin-1")
    lines = [line for line in output.splitlines() if "/v1/models?x=%41" in line]
    assert len(lines) == 2, output
    plain, gunicorns = (re.sub(r"\[[^\]]*\]", "[time]", line) for line in lines)
    assert plain == gunicorns
    assert plain.startswith('127.0.0.1 - - [time] "GET /v1/models?x=%41 HTTP/1.1" 200 ')
    assert plain.endswith(' "r" "agent/1.0 \\"quoted\\""')
