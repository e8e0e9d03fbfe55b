"""What every upstream provider is: one small interface and one error type.

A provider takes a chat-completions body and returns the answer as
chat-completions JSON, or as a stream of chat-completions SSE events, whatever
protocol its upstream speaks; the dispatcher (retries, fallback, relaying)
never knows which. Every failure becomes a ``ProviderError``, which says
whether trying again may help.
"""

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from routing.config import ModelConfig, ProviderConfig
from routing.errors import (
    PROVIDER_KEY_STATUSES,
    provider_key_refused_message,
    provider_not_found_message,
)
from routing.providers.redact import Redactor

# Statuses worth a second try: rate limits and server-side failures (529:
# Anthropic's "overloaded").
RETRYABLE_STATUSES = {429, 500, 502, 503, 504, 529}


class ProviderError(Exception):
    """An upstream call failed. ``kind``: connect, timeout, status, malformed or unconfigured.

    ``unconfigured``: the provider's key variable is unset, so nothing was sent;
    trying the same model again cannot help, the next candidate may.

    ``retry_after``: the seconds the upstream asked us to wait (its
    ``retry-after`` header), None when it said nothing.
    """

    def __init__(
        self,
        kind: str,
        message: str,
        status: int | None = None,
        body=None,
        retry_after: float | None = None,
    ):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.body = body
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        if self.kind in ("connect", "timeout"):
            return True
        return self.kind == "status" and self.status in RETRYABLE_STATUSES

    @property
    def next_model_may_help(self) -> bool:
        """Whether a fallback candidate (another model, maybe another provider) is worth a try."""
        return self.retryable or self.kind == "unconfigured"


@dataclass
class StreamReply:
    """An open upstream stream; ``events`` yields raw SSE events (bytes, without the blank line)."""

    response: object  # the HTTP response, closed with the reply
    events: object

    def close(self):
        self.response.close()


@dataclass(frozen=True)
class CallContext:
    """What a provider may need beside the body: the model's config, pinch's stable prefixes.

    ``stable_prefixes()``: (how many leading messages of the body the next
    turn's pruning will send unchanged, the same figure for the previous
    turn), all of them when pinch is off. A provider whose cache needs
    explicit breakpoints puts them there (routing.pruning.stable_prefixes).
    A call, computed once a request and only for a provider that asks.
    """

    model: ModelConfig
    stable_prefixes: Callable[[], tuple[int, int]]


class Provider:
    """Base: send a chat-completions body, get JSON back or a stream of SSE events."""

    # Takes a Messages API request as the client sent it (``messages``,
    # ``messages_stream``, ``count_tokens``): /v1/messages goes out untranslated.
    speaks_messages = False
    # Takes a Responses API request as the client sent it (``responses``,
    # ``responses_stream``): /v1/responses goes out untranslated.
    speaks_responses = False

    def __init__(self, name: str, config: ProviderConfig):
        self.name = name
        self.config = config

    def api_key(self) -> str | None:
        """The key from the variable the config names; ``unconfigured`` when it is unset."""
        key = self.config.api_key()
        if self.config.api_key_env and not key:
            raise ProviderError(
                "unconfigured",
                f"provider {self.name!r}: the environment variable "
                f"{self.config.api_key_env} is not set",
            )
        return key

    def chat(
        self, body: dict, timeout: float | None = None, context: CallContext | None = None
    ) -> dict:
        raise NotImplementedError

    def chat_stream(self, body: dict, context: CallContext | None = None) -> StreamReply:
        raise NotImplementedError

    def redactor(self) -> Redactor:
        """What must never leave through this provider's answers: its key."""
        return Redactor([self.config.api_key()])


# Errors are small; a hostile upstream must not make us read a huge one.
MAX_ERROR_BYTES = 64 * 1024


def error_from_response(response, provider_name, api_key=None, key_env=None) -> ProviderError:
    """A non-200 answer as a ProviderError; the key redacted after decoding (it gets relayed).

    A refused key (401, 403) and a path the upstream does not serve (404)
    name their cause (``routing.errors``): the provider and its key variable,
    the URL asked and what a base_url usually ends in.
    """
    redactor = Redactor([api_key])
    try:
        raw = next(response.iter_content(MAX_ERROR_BYTES), b"")
    except Exception:  # noqa: BLE001 - an unreadable error body is just absent
        raw = b""
    try:
        body = redactor.value(json.loads(raw))
    except ValueError:
        body = None
    detail = ""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        detail = redactor.text(str(body["error"].get("message") or ""))
    status = response.status_code
    if status in PROVIDER_KEY_STATUSES:
        message = provider_key_refused_message(provider_name, status, key_env, detail)
    elif status == 404:
        url = getattr(response, "shown_url", "")
        message = provider_not_found_message(provider_name, url, detail)
    else:
        message = f"provider {provider_name!r} answered HTTP {status}"
        if detail:
            message += f": {detail}"
    return ProviderError(
        "status", message, response.status_code, body, retry_after_seconds(response)
    )


def retry_after_seconds(response) -> float | None:
    """The upstream's ``retry-after`` in seconds (the HTTP-date form is not used by APIs)."""
    value = response.headers.get("retry-after")
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and seconds >= 0 else None


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0
