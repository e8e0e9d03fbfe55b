"""What every upstream provider is: one interface, its capabilities, and how its errors read.

Every provider takes a chat-completions body and answers chat-completions
JSON or a stream of chat-completions SSE events (``chat``, ``chat_stream``),
whatever its upstream speaks. A provider whose upstream speaks a client's
protocol itself says so in its ``Capabilities``, and then also takes that
client's request as sent (``messages``, ``messages_stream``,
``count_tokens``; ``responses``, ``responses_stream``): the protocol's wire
(routing.protocols.*.wire) picks the call by the capability. Every method a
wire may call is declared here; a provider without the capability raises
NotImplementedError. Every failure is a ``ProviderError`` (routing.errors),
which says whether trying again may help.
"""

import json
import time
from dataclasses import dataclass

from routing.config import ModelConfig, ProviderConfig
from routing.errors import (
    PROVIDER_KEY_STATUSES,
    ProviderError,
    provider_key_refused_message,
    provider_not_found_message,
)
from routing.protocols.base import StreamReply
from routing.providers.redact import Redactor


@dataclass(frozen=True)
class Capabilities:
    """What a provider takes as the client sent it, untranslated, and what it needs of a plan."""

    # The Messages API (``messages``, ``messages_stream``, ``count_tokens``).
    messages: bool = False
    # The Responses API (``responses``, ``responses_stream``).
    responses: bool = False
    # Its prompt cache reads only at breakpoints it is told: the plan computes the
    # stable prefixes for it (routing.pruning.stable_prefixes), and only for it.
    cache_breakpoints: bool = False


@dataclass(frozen=True)
class CallContext:
    """What a provider may need beside the body: the model's config, pinch's stable prefixes.

    ``stable_prefixes``: (how many leading messages of the body the next
    turn's pruning will send unchanged, the same figure for the previous
    turn), from the plan, which computes them only when a candidate's provider
    has ``cache_breakpoints``; None otherwise (then: all of them).
    """

    model: ModelConfig
    stable_prefixes: tuple[int, int] | None = None


class Provider:
    """Base: send a chat-completions body, get JSON back or a stream of SSE events."""

    capabilities = Capabilities()

    def __init__(self, name: str, config: ProviderConfig):
        self.name = name
        self.config = config
        self._redactor: tuple[str | None, Redactor] | None = None

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

    # With ``capabilities.messages``: a Messages request (its ``body`` and
    # ``block_of``, routing.protocols.messages.shapes.MessagesRequest) as sent;
    # ``headers``: the client's anthropic-beta and anthropic-version.

    def messages(self, request, context: CallContext | None, headers: dict) -> dict:
        raise NotImplementedError

    def messages_stream(self, request, context: CallContext | None, headers: dict) -> StreamReply:
        raise NotImplementedError

    def count_tokens(self, body: dict, headers: dict) -> dict:
        raise NotImplementedError

    # With ``capabilities.responses``: a Responses body as sent.

    def responses(self, body: dict) -> dict:
        raise NotImplementedError

    def responses_stream(self, body: dict) -> StreamReply:
        raise NotImplementedError

    def redactor(self) -> Redactor:
        """What must never leave through this provider's answers: its key (as it is now)."""
        key = self.config.api_key()
        made = self._redactor
        if made is None or made[0] != key:
            made = self._redactor = (key, Redactor([key]))
        return made[1]


# Errors are small; a hostile upstream must not make us read a huge one.
MAX_ERROR_BYTES = 64 * 1024


# The longest wait an upstream's retry-after is relayed with: a client told to
# come back in 11 days (999999) would simply stop.
MAX_RETRY_AFTER_SECONDS = 60.0


def error_from_response(response, provider_name, api_key=None, key_env=None) -> ProviderError:
    """A non-200 answer as a ProviderError; the key redacted after decoding (it gets relayed).

    A redirect is never followed nor relayed (a client would get a 3xx
    pointing nowhere it can go): it is a 502 naming where the upstream sent it.
    A refused key (401, 403) and a path the upstream does not serve (404)
    name their cause (``routing.errors``): the provider and its key variable,
    the URL asked and what a base_url usually ends in.
    """
    redactor = Redactor([api_key])
    if 300 <= response.status_code < 400:
        location = redactor.text(str(response.headers.get("location") or "nowhere"))[:200]
        return ProviderError(
            "malformed",
            f"provider {provider_name!r} answered with a redirect (HTTP {response.status_code} "
            f"to {location}); the router follows no redirects: fix the provider's base_url",
        )
    try:
        raw = response.read(MAX_ERROR_BYTES)
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
    """The upstream's ``retry-after`` in seconds, at most ``MAX_RETRY_AFTER_SECONDS``
    (the HTTP-date form is not used by APIs)."""
    value = response.headers.get("retry-after")
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    if seconds is None or not seconds >= 0:  # also NaN
        return None
    return min(seconds, MAX_RETRY_AFTER_SECONDS)


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0
