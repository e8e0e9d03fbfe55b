"""The OpenAI chat-completions provider: OpenAI, OpenRouter, Ollama's /v1, vLLM, llama.cpp.

All outbound HTTP of this provider goes through ``_post``. The provider's key
comes from the environment variable its config names and is sent upstream; it
is never logged and never put in an error message.
"""

import json

import requests

from routing.config import ProviderConfig
from routing.providers.base import Provider, ProviderError, StreamReply, error_from_response
from routing.providers.sse import split_sse_events

# Read size for relaying a stream: read1 returns whatever has arrived, up to this.
STREAM_READ_BYTES = 65536


class OpenAICompatibleProvider(Provider):
    def __init__(self, name: str, config: ProviderConfig):
        super().__init__(name, config)
        # One pooled session per provider: keep-alive to the upstream saves a
        # TCP (and TLS) handshake on every request.
        self._session = requests.Session()
        self._session.trust_env = False

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        key = self.api_key()
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
                raise error_from_response(response, self.name, self.config.api_key())
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
                raise error_from_response(response, self.name, self.config.api_key())
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
