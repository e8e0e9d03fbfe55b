"""HTTP clients for upstream providers, behind one small interface.

Every provider speaks the OpenAI chat-completions protocol (OpenAI,
OpenRouter, Ollama's /v1, vLLM, llama.cpp all do), so one class serves them
all; the base class is the seam a new protocol would plug into. All outbound
HTTP goes through ``Provider._post`` and every failure becomes one error type,
``ProviderError``, which says whether trying again may help.

The provider's key comes from the environment variable its config names and
is sent upstream; it is never logged and never put in an error message.
"""

import json
import threading
import time
from dataclasses import dataclass, field

import requests

from routing.config import ProviderConfig

# Read size for relaying a stream: read1 returns whatever has arrived, up to this.
STREAM_READ_BYTES = 65536
# Statuses worth a second try: rate limits and server-side failures.
RETRYABLE_STATUSES = {429, 500, 502, 503, 504}


class ProviderError(Exception):
    """An upstream call failed. ``kind``: connect, timeout, status or malformed."""

    def __init__(self, kind: str, message: str, status: int | None = None, body=None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.body = body

    @property
    def retryable(self) -> bool:
        if self.kind in ("connect", "timeout"):
            return True
        return self.kind == "status" and self.status in RETRYABLE_STATUSES


@dataclass
class StreamReply:
    """An open upstream stream; ``events`` yields raw SSE events (bytes, without the blank line)."""

    response: requests.Response
    events: object
    headers: dict = field(default_factory=dict)

    def close(self):
        self.response.close()


class Provider:
    """Base: send a chat-completions body, get JSON back or a stream of SSE events."""

    def __init__(self, name: str, config: ProviderConfig):
        self.name = name
        self.config = config

    def chat(self, body: dict, timeout: float | None = None) -> dict:
        raise NotImplementedError

    def chat_stream(self, body: dict) -> StreamReply:
        raise NotImplementedError


def _error_from_response(response, provider_name, api_key=None) -> ProviderError:
    try:
        text = response.text
        if api_key:
            # Some providers quote the key they refused; the answer is relayed to our client.
            text = text.replace(api_key, "[redacted]")
        body = json.loads(text)
    except ValueError:
        body = None
    message = f"provider {provider_name!r} answered HTTP {response.status_code}"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        detail = body["error"].get("message")
        if detail:
            message += f": {detail}"
    return ProviderError("status", message, response.status_code, body)


def split_sse_events(chunks):
    """Yield complete SSE events (bytes) from an iterator of arbitrary byte chunks."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        if b"\r\n" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
        while True:
            end = buffer.find(b"\n\n")
            if end < 0:
                break
            event, buffer = buffer[:end], buffer[end + 2 :]
            if event:
                yield event
    if buffer.strip():
        yield buffer.strip(b"\n")


class OpenAICompatibleProvider(Provider):
    def __init__(self, name: str, config: ProviderConfig):
        super().__init__(name, config)
        # One pooled session per provider: keep-alive to the upstream saves a
        # TCP (and TLS) handshake on every request.
        self._session = requests.Session()
        self._session.trust_env = False

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        key = self.config.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _post(self, body: dict, stream: bool, read_timeout: float):
        url = f"{self.config.base_url}/chat/completions"
        headers = self._headers()
        if stream:
            headers["Accept"] = "text/event-stream"
            headers["Accept-Encoding"] = "identity"
        data = json.dumps(body, ensure_ascii=False).encode()
        try:
            return self._session.post(
                url,
                data=data,
                headers=headers,
                stream=stream,
                timeout=(self.config.connect_timeout_seconds, read_timeout),
            )
        except requests.exceptions.ConnectTimeout:
            raise ProviderError(
                "connect", f"provider {self.name!r}: connection timed out"
            ) from None
        except requests.exceptions.Timeout:
            raise ProviderError(
                "timeout", f"provider {self.name!r} sent nothing for {read_timeout:g}s"
            ) from None
        except requests.exceptions.ConnectionError:
            raise ProviderError(
                "connect", f"cannot connect to provider {self.name!r} at {self.config.shown_url}"
            ) from None
        except requests.exceptions.RequestException as error:
            raise ProviderError(
                "connect", f"provider {self.name!r}: {type(error).__name__}"
            ) from None

    def chat(self, body: dict, timeout: float | None = None) -> dict:
        response = self._post(
            body, stream=False, read_timeout=timeout or self.config.timeout_seconds
        )
        try:
            if response.status_code != 200:
                raise _error_from_response(response, self.name, self.config.api_key())
            try:
                data = response.json()
            except (ValueError, requests.exceptions.RequestException):
                raise ProviderError(
                    "malformed", f"provider {self.name!r} answered with a body that is not JSON"
                ) from None
            if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
                raise ProviderError(
                    "malformed", f"provider {self.name!r} answered without 'choices'"
                )
            return data
        finally:
            response.close()

    def chat_stream(self, body: dict) -> StreamReply:
        response = self._post(body, stream=True, read_timeout=self.config.timeout_seconds)
        if response.status_code != 200:
            try:
                raise _error_from_response(response, self.name, self.config.api_key())
            finally:
                response.close()
        return StreamReply(response, split_sse_events(self._read_chunks(response)))

    def _read_chunks(self, response):
        raw = response.raw
        try:
            while True:
                chunk = raw.read1(STREAM_READ_BYTES)
                if not chunk:
                    return
                yield chunk
        except requests.exceptions.RequestException as error:
            raise ProviderError(
                "timeout", f"provider {self.name!r} stream broke: {error}"
            ) from None
        except Exception as error:  # urllib3 read errors: timeouts, resets mid-stream
            kind = "timeout" if "timed out" in str(error).lower() else "connect"
            raise ProviderError(kind, f"provider {self.name!r} stream broke mid-answer") from None


PROVIDER_CLASSES = {"openai": OpenAICompatibleProvider}

_lock = threading.Lock()
_providers: dict = {}


def provider_for(name: str, config: ProviderConfig) -> Provider:
    """The process's client for this provider; a changed config makes a new one."""
    key = (name, config)
    with _lock:
        provider = _providers.get(key)
        if provider is None:
            if len(_providers) > 64:
                _providers.clear()
            provider = _providers[key] = PROVIDER_CLASSES[config.kind](name, config)
        return provider


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0
