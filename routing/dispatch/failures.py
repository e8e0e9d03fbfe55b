"""When every try failed: what the client is told, decided once for every protocol.

A status the upstream answered is relayed (its body too, and its
``retry-after``); a connect error or a timeout is a 502 or 504 saying which
models were tried and why; a provider key unset or refused, which only the
operator can mend, is the final ``OPERATOR_FIX_STATUS`` (routing.errors).
The protocol's errors module renders the ``Failure`` in its shape.
"""

from routing.errors import OPERATOR_FIX_STATUS, PROVIDER_KEY_STATUSES, Failure, ProviderError


def tried(attempts: list) -> str:
    """The failed attempts in a sentence: each model once, with its reason and its tries."""
    groups = []  # [model, reason, tries]
    for attempt in attempts:
        if attempt["result"] == "ok":
            continue
        reason = attempt.get("reason") or attempt["result"]
        if groups and groups[-1][:2] == [attempt["model"], reason]:
            groups[-1][2] += 1
        else:
            groups.append([attempt["model"], reason, 1])
    return "; ".join(
        f"{model}: {reason}" + (f" ({tries} tries)" if tries > 1 else "")
        for model, reason, tries in groups
    )


def failure_for(error: ProviderError, attempts: list = ()) -> Failure:
    """The client's answer when every try failed: relay a status, else 502/504 saying why."""
    if error.kind == "status" and error.status in PROVIDER_KEY_STATUSES:
        # The provider refused the router's key for it: not the 401 that would read
        # as the client's own router key refused (the message names the variable),
        # and final: no retry mends it.
        return Failure(OPERATOR_FIX_STATUS, error.message, "provider_key_rejected")
    if error.kind == "status":
        return Failure(error.status, error.message, "upstream_error", error.body, error.retry_after)
    message = error.message
    if attempts:
        message = f"No upstream answered. Tried {tried(attempts)}."
    if error.kind == "timeout":
        return Failure(504, message, "upstream_timeout")
    if all(a["result"] in ("ok", "unconfigured") for a in attempts):
        return Failure(OPERATOR_FIX_STATUS, message, "provider_key_missing")
    return Failure(502, message, "upstream_unavailable")
