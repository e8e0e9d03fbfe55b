"""X-Request-Id on every answer, in time order, and in the log for every refusal.

The OpenAI and Anthropic SDKs read ``x-request-id`` into ``request_id``, so it
is what a user quotes. Decision ids come from per-process blocks
(``routing.recording.ids``) and are not in time order across workers
(decision-129 may come before decision-67), so the id shown starts with the
time the request arrived, to the second, in UTC: ``20261201T183232Z-decision-129``.
Two ids sort as their requests came, and the decision id in it finds the row
(admin's decision search takes the whole id).

An answer with no decision row (a 404 for an unknown model, a refused key, a
bad Host) gets ``20261201T183232Z-<8 hex>`` from ``RequestIdMiddleware``, the
outermost middleware, so Django's own refusals carry one too; every answer
from 400 up is logged with it, so any failure can be quoted and found.
"""

import logging
import re
import secrets
from datetime import UTC, datetime

from django.utils import timezone
from django.utils.deprecation import MiddlewareMixin

log = logging.getLogger("router.requests")

HEADER = "X-Request-Id"
_DECISION = re.compile(r"(?:^|-)decision-(\d+)$")


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def decision_request_id(decision_id: int, created_at: datetime) -> str:
    """The request id of an answer with a decision row: its time, then its id."""
    return f"{_stamp(created_at)}-decision-{decision_id}"


def new_request_id(now: datetime | None = None) -> str:
    """A request id for an answer without a row: its time and 32 random bits."""
    return f"{_stamp(now or timezone.now())}-{secrets.token_hex(4)}"


def decision_id_in(request_id: str) -> int | None:
    """The decision id a quoted request id names (``...-decision-129`` or ``decision-129``)."""
    match = _DECISION.search(request_id.strip())
    return int(match.group(1)) if match else None


class RequestIdMiddleware(MiddlewareMixin):
    # A hook, not a __call__ of its own: the API's chain folds it with Django's
    # middlewares into one layer (router_project.api_front).
    def process_response(self, request, response):
        request_id = response.get(HEADER)
        if not request_id:
            request_id = new_request_id()
            response[HEADER] = request_id
        if response.status_code >= 400:
            # The path only: a query string may carry something the log should not.
            log.warning(
                "answer_refused request_id=%s status=%s method=%s path=%s",
                request_id,
                response.status_code,
                request.method,
                request.path,
            )
        return response
