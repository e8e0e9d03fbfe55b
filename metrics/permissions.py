"""Who may read what: the metrics token and the staff check for the snapshot."""

import hmac

from django.conf import settings

from routing.auth import bearer_token, key_for_request


def metrics_token_ok(request) -> bool:
    """True for a signed-in staff user (the front page's link), for a request bearing exactly
    METRICS_TOKEN, and for anyone when none is set and METRICS_PUBLIC is."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_staff:
        return True
    expected = settings.METRICS_TOKEN
    if not expected:
        return settings.METRICS_PUBLIC
    token = bearer_token(request)
    # compare_digest: the time taken must not tell a guesser how many characters matched.
    return token is not None and hmac.compare_digest(token.encode(), expected.encode())


def metrics_with_tenant_labels() -> bool:
    """Labels that tell tenants' traffic apart (tool names) only behind a token."""
    return bool(settings.METRICS_TOKEN)


VIEW_DECISIONS = "routing.view_routedecision"


def may_view_decisions(request) -> bool:
    """Whether the request may see decision rows (every tenant's keys, models, tokens).

    A staff user needs the permission the admin's decision list asks for; a
    staff API key (what the TUI uses) is the operator's own and may.
    """
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_staff:
        return user.has_perm(VIEW_DECISIONS)
    key = key_for_request(request)
    return key is not None and key.is_staff


def is_staff_request(request) -> bool:
    """A staff user's admin session, or an active router API key marked staff."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_staff:
        return True
    key = key_for_request(request)
    return key is not None and key.is_staff
