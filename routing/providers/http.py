"""The one outbound HTTP seam every provider shares: a pooled session, errors as ProviderError.

Whatever protocol a provider speaks, a connection that fails, a timeout or a
stream that breaks mid-answer must reach the dispatcher as the same kinds of
``ProviderError`` (connect, timeout), so retries and fallback treat every
upstream alike. Tests patch nothing here: they run real local servers.
"""

import requests

from routing.config import ProviderConfig
from routing.providers.base import Provider, ProviderError

# Read size for relaying a stream: read1 returns whatever has arrived, up to this.
STREAM_READ_BYTES = 65536


class HttpProvider(Provider):
    def __init__(self, name: str, config: ProviderConfig):
        super().__init__(name, config)
        # One pooled session per provider: keep-alive to the upstream saves a
        # TCP (and TLS) handshake on every request.
        self._session = requests.Session()
        self._session.trust_env = False

    def _send(self, url: str, data: bytes, headers: dict, stream: bool, read_timeout: float):
        if stream:
            headers = {**headers, "Accept": "text/event-stream", "Accept-Encoding": "identity"}
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

    def _json_body(self, response) -> dict:
        try:
            data = response.json()
        except (ValueError, requests.exceptions.RequestException):
            raise ProviderError(
                "malformed", f"provider {self.name!r} answered with a body that is not JSON"
            ) from None
        if not isinstance(data, dict):
            raise ProviderError("malformed", f"provider {self.name!r} answered with no object")
        return data

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
