"""The two failures the API knows: a request the router refuses, and an upstream call that failed.

Below every package that raises them (protocols, providers, dispatch,
pipeline): no Django, no other import. Each client protocol renders them in
its own error shape (routing.protocols.*.errors); what the last-resort
handlers do is in routing.error_handlers.
"""

from dataclasses import dataclass

# Paths whose clients are programs: a failure there answers JSON, never an HTML page.
API_PATH_PREFIXES = ("/v1/", "/metrics", "/admin/api/")

# Where clients speak the Messages API and read errors in its shape.
MESSAGES_PATH = "/v1/messages"

# Statuses worth a second try: rate limits and server-side failures (529:
# Anthropic's "overloaded").
RETRYABLE_STATUSES = {429, 500, 502, 503, 504, 529}


class RouterError(Exception):
    """A request the router refuses or cannot complete; carries its HTTP status."""

    def __init__(
        self, status: int, message: str, code: str | None = None, param=None, headers=None
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.headers = dict(headers or {})  # e.g. Retry-After, on every protocol's answer

    # (status, error type) in each client protocol; None: the status's usual type. A
    # refusal the providers answer differently (an exhausted budget) overrides them.
    def as_openai(self) -> tuple[int, str | None]:
        return self.status, None

    def as_anthropic(self) -> tuple[int, str | None]:
        return self.status, None


def database_unavailable_error(what: str) -> RouterError:
    return RouterError(
        503, f"The router's database is unavailable: {what}. Try again shortly.", "db_unavailable"
    )


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


@dataclass(frozen=True)
class Failure:
    """What the client is told when every try failed, decided once (routing.dispatch.failures).

    Each protocol renders it in its shape: ``relayed`` is the upstream's own
    error body when its status is relayed (OpenAI-shaped: the providers make
    it so), None when the router says why itself.
    """

    status: int
    message: str
    code: str
    relayed: dict | None = None
    retry_after: float | None = None
