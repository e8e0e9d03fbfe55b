"""Who may read /metrics: the metrics token."""

import hmac

from django.conf import settings

from routing.auth import bearer_token


def metrics_token_ok(request) -> bool:
    """True when METRICS_TOKEN is unset, or the request bears exactly that token."""
    expected = settings.METRICS_TOKEN
    if not expected:
        return True
    token = bearer_token(request)
    # compare_digest: the time taken must not tell a guesser how many characters matched.
    return token is not None and hmac.compare_digest(token.encode(), expected.encode())
