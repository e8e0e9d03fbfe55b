"""Who may read what: the metrics token and the staff check for the snapshot."""

import hmac

from django.conf import settings

from routing.auth import bearer_token, key_for_request


def metrics_token_ok(request) -> bool:
    """True when METRICS_TOKEN is unset, or the request bears exactly that token."""
    expected = settings.METRICS_TOKEN
    if not expected:
        return True
    token = bearer_token(request)
    # compare_digest: the time taken must not tell a guesser how many characters matched.
    return token is not None and hmac.compare_digest(token.encode(), expected.encode())


def is_staff_request(request) -> bool:
    """A staff user's admin session, or an active router API key marked staff."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_staff:
        return True
    key = key_for_request(request)
    return key is not None and key.is_staff
