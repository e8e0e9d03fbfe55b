"""The two failures the API knows: a request the router refuses, and an upstream call that failed.

Below every package that raises them (protocols, providers, dispatch,
pipeline): no Django, no other import. Each client protocol renders them in
its own error shape (routing.protocols.*.errors); what the last-resort
handlers do is in routing.error_handlers.
"""

from dataclasses import dataclass
from difflib import get_close_matches

# Paths whose clients are programs: a failure there answers JSON, never an HTML page.
API_PATH_PREFIXES = ("/v1/", "/metrics", "/admin/api/")

# Where clients speak the Messages API and read errors in its shape.
MESSAGES_PATH = "/v1/messages"

# Statuses worth a second try: rate limits and server-side failures (529:
# Anthropic's "overloaded").
RETRYABLE_STATUSES = {429, 500, 502, 503, 504, 529}


# An upstream refusing the router's key for it: not relayed, since the client's own
# (router) key was accepted; relaying the 401 would read as a bad router key.
PROVIDER_KEY_STATUSES = (401, 403)

# What the router answers when only its operator can make the request work: a
# provider's key unset or refused, a config file broken. Not a 5xx: every agent
# retries those for minutes (the openai and anthropic SDKs, Claude Code, Codex
# CLI and opencode's AI SDK all retry 408, 409, 429 and any 5xx; Codex showed
# "high demand" for a 500). 400, as Anthropic answers a spent credit balance:
# the one status every client tried takes as final. Codex CLI 0.171 retries a
# 401 or a 424 five times (measured: tests/routing/test_codex_final_errors.py)
# and reads no x-should-retry; a 400 or a 404 it shows at once.
OPERATOR_FIX_STATUS = 400
# The statuses below 500 that clients retry by themselves (see above).
CLIENT_RETRIED_STATUSES = (408, 409, 429)


def is_final(status: int, can_wait: bool) -> bool:
    """Whether retrying the same request cannot succeed, so the client should stop at once.

    A 5xx, a timeout (408) or a conflict (409) may pass next time. A 429 may
    when waiting can lift it (``can_wait``: a rate limit that says how long
    with Retry-After, or an upstream's); the router's own 429 without one (a
    key's budget spent, a prompt larger than its whole minute) will not.
    Every other 4xx (a bad key, an unknown model, a bad body, a provider key
    unset) fails the same way however often it is sent.
    """
    if status == 429:
        return not can_wait
    return 400 <= status < 500 and status not in CLIENT_RETRIED_STATUSES


# The final statuses each client protocol's agents retry all the same, reading no
# x-should-retry; there a final refusal, or an upstream's final error relayed (a 422
# from a FastAPI server), is answered OPERATOR_FIX_STATUS instead (its code, type and
# message, or the upstream's body, kept). No refusal of the router's own is a 403 (a
# provider's 401/403 is a 400 provider_key_rejected); it is listed as Codex's rule.
# Measured with the real agents (bench/check_final_errors.py) and read in their source:
# * chat completions: opencode's AI SDK retries every 429 (APICallError.isRetryable:
#   408, 409, 429, 5xx) and opencode without end (1.18.33: 8 requests in 45 s for a
#   spent budget), so a 429 no wait lifts (a spent budget) is a 400;
# * the Responses API: Codex CLI 0.171 takes as final only a 400, a 404 coded
#   model_not_found and a 429 coded insufficient_quota (codex-rs CodexErr::is_retryable:
#   any other status is UnexpectedStatus, retried five times, ~7 s), so a final 401 (a
#   wrong router key), 403, 413 or 422 is a 400. So is a 429 no wait lifts (a spent
#   budget): Codex takes OpenAI's 429 insufficient_quota as final but shows its own
#   "Quota exceeded. Check your plan and billing details." in place of the router's
#   message (which budget, when it resets), and a 400's body verbatim (codex-rs
#   api_bridge::map_api_error: a 400 is CodexErr::InvalidRequest(body));
# * Messages: Claude Code obeys x-should-retry, whatever the status.
AGENT_RETRIED_FINALS = {"chat": (429,), "responses": (401, 403, 413, 422, 429), "messages": ()}


def answered_status(status: int, can_wait: bool, protocol: str) -> int:
    """The status a refusal is answered with to ``protocol``'s agents (AGENT_RETRIED_FINALS)."""
    if is_final(status, can_wait) and status in AGENT_RETRIED_FINALS[protocol]:
        return OPERATOR_FIX_STATUS
    return status


def final_headers(status: int, headers: dict, can_wait: bool | None = None) -> dict:
    """``headers`` for an error answer, with ``x-should-retry: false`` when it is final.

    The anthropic and openai SDKs (and Claude Code, which retries even a 401
    eleven times without it) obey the header before their own status rules;
    ``can_wait`` None: waiting helps when the answer carries Retry-After.
    """
    if can_wait is None:
        can_wait = "Retry-After" in headers
    if not is_final(status, can_wait):
        return dict(headers)
    return {**headers, "x-should-retry": "false"}


# What creates a router key, as README runs it: the system Python has no Django.
CREATE_KEY_COMMAND = ".venv/bin/python manage.py createapikey NAME"


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


def invalid_key_error(path: str) -> RouterError:
    """The 401 for a missing or unknown router key, in the words of the client's protocol.

    Claude Code (/v1/messages) sends its key as ``x-api-key``, from
    ANTHROPIC_API_KEY; the OpenAI clients send ``Authorization: Bearer``.
    """
    if path.startswith(MESSAGES_PATH):
        how = (
            "Send your router key as 'x-api-key: <router key>' (Claude Code: set "
            "ANTHROPIC_API_KEY to it, and ANTHROPIC_BASE_URL to the router) or as "
            "'Authorization: Bearer <router key>'"
        )
    else:
        how = "Send 'Authorization: Bearer <router key>'"
    return RouterError(
        401,
        f"Missing or invalid API key. {how} (create one with: {CREATE_KEY_COMMAND}).",
        "invalid_api_key",
    )


def unknown_model_error(
    name: str, auto_model: str, model_ids: list[str], near: tuple = ()
) -> RouterError:
    """The 404 for a model name nothing serves, with the closest names when one is near
    (``near``: names the caller found close already, offered first)."""
    names = [auto_model, *model_ids]
    close = list(dict.fromkeys([*near, *get_close_matches(name, names, n=3, cutoff=0.6)]))[:3]
    hint = f"Did you mean {' or '.join(repr(n) for n in close)}? " if close else ""
    return RouterError(
        404,
        f"The model {name!r} does not exist. {hint}Use {auto_model!r} or one of: "
        + ", ".join(model_ids),
        "model_not_found",
        "model",
    )


def body_too_large_error(size: int | None, limit: int) -> RouterError:
    """The 413, naming the setting that raises the limit, its value as it is set."""
    what = f"The body is {size} bytes" if size is not None else "The body is over the limit"
    return RouterError(
        413,
        f"{what}; the limit is {limit} bytes (ROUTER_MAX_BODY_BYTES={limit}, an environment "
        "variable of the router).",
        "body_too_large",
    )


def provider_key_refused_message(provider: str, status: int, key_env: str | None, detail: str):
    """A provider's 401/403, naming the provider and the variable its key comes from."""
    said = f": {detail}" if detail else ""
    if key_env:
        fix = f"Set {key_env} to a valid key for {provider!r} and restart the router."
        whose = f"the key in {key_env}"
    else:
        fix = f"Give provider {provider!r} an api_key_env in the router config."
        whose = "the request (the config names no api_key_env for it)"
    return (
        f"Provider {provider!r} refused {whose} (HTTP {status}{said}). "
        f"Your router key was accepted; this is the router's key for the provider. {fix}"
    )


def provider_not_found_message(provider: str, url: str, detail: str):
    """A provider's 404, naming the URL asked and, when it lacks /v1, the likely fix."""
    said = f": {detail}" if detail else ""
    message = f"provider {provider!r} answered HTTP 404 at {url or 'its base_url'}{said}"
    if url and "/v1/" not in url:
        message += (
            ". Its base_url has no /v1: OpenAI-compatible servers serve under /v1 "
            "(e.g. base_url: http://localhost:11434/v1)"
        )
    return message


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

    def headers(self) -> dict:
        """Retry-After when the upstream asked for a wait; ``x-should-retry`` when final.

        An upstream's 429 may lift with time even when it names no wait.
        """
        headers = {} if self.retry_after is None else {"Retry-After": f"{self.retry_after:g}"}
        return final_headers(self.status, headers, can_wait=True)
