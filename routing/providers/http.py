"""The one outbound HTTP seam every provider shares: a pooled session, deadlines, redaction.

Whatever protocol a provider speaks, a connection that fails, a timeout or a
stream that breaks mid-answer must reach the dispatcher as the same kinds of
``ProviderError`` (connect, timeout), so retries and fallback treat every
upstream alike. Every answer is read under the attempt's deadline
(routing/providers/deadlines.py) and comes out with the provider's key
redacted after decoding (routing/providers/redact.py). Tests patch nothing
here: they run real local servers.
"""

import json
import time

import requests

from routing.config import ProviderConfig
from routing.providers.base import Provider, ProviderError
from routing.providers.deadlines import read_body, read_events


class HttpProvider(Provider):
    def __init__(self, name: str, config: ProviderConfig):
        super().__init__(name, config)
        # One pooled session per provider: keep-alive to the upstream saves a
        # TCP (and TLS) handshake on every request.
        self._session = requests.Session()
        self._session.trust_env = False

    def _send(self, url: str, data: bytes, headers: dict, stream: bool, deadline: float):
        """POST; the answer's body is left unread, for ``_json_body`` or ``_read_events``.

        ``deadline``: seconds for the whole attempt (a stream: until its first
        event). The response carries when the attempt started and its deadline.
        """
        if stream:
            headers = {**headers, "Accept": "text/event-stream", "Accept-Encoding": "identity"}
        started = time.monotonic()
        try:
            response = self._session.post(
                url,
                data=data,
                headers=headers,
                stream=True,
                timeout=(min(self.config.connect_timeout_seconds, deadline), deadline),
            )
        except requests.exceptions.ConnectTimeout:
            raise ProviderError(
                "connect", f"provider {self.name!r}: connection timed out"
            ) from None
        except requests.exceptions.Timeout:
            raise ProviderError(
                "timeout", f"provider {self.name!r} sent nothing for {deadline:g}s"
            ) from None
        except requests.exceptions.ConnectionError:
            raise ProviderError(
                "connect", f"cannot connect to provider {self.name!r} at {self.config.shown_url}"
            ) from None
        except requests.exceptions.RequestException as error:
            raise ProviderError(
                "connect", f"provider {self.name!r}: {type(error).__name__}"
            ) from None
        response.attempt_started = started
        response.attempt_deadline = deadline
        return response

    def _json_body(self, response) -> dict:
        """The whole answer, within the attempt's deadline, as a JSON object, key redacted."""
        raw = read_body(response, response.attempt_started, response.attempt_deadline, self.name)
        try:
            data = json.loads(raw)
        except ValueError:
            raise ProviderError(
                "malformed", f"provider {self.name!r} answered with a body that is not JSON"
            ) from None
        if not isinstance(data, dict):
            raise ProviderError("malformed", f"provider {self.name!r} answered with no object")
        redactor = self.redactor()
        return redactor.value(data) if redactor.might_hide(raw) else data

    def _read_events(self, response):
        """The SSE events of a stream, under its deadlines, each with the key redacted."""
        events = read_events(
            response,
            response.attempt_started,
            response.attempt_deadline,
            self.config.stream_idle_seconds,
            self.name,
        )
        redactor = self.redactor()
        if redactor:
            events = (redactor.sse_event(event) for event in events)
        return events
