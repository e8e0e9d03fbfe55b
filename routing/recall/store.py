"""Reading the recall store: the original behind a handle, and what the model recalled.

The loop that answers ``router_recall`` asks ``lookup``:
this request's own originals first (``pending``: PinchOutcome.recallable,
which holds every result its payload carries compressed, so most recalls
never reach the database), then the conversation's stored rows
(routing/models/recall.py), which every worker and instance sharing the
database sees. A database that cannot answer degrades to "not available",
logged: a recall never fails a request.

``recalled_indexes`` is pinch's one read per request for what a recall
teaches it (docs/pinch.md, "Recall"): the conversation's results the model
recalled in ``RESTORE_AFTER`` requests or more, which pinch sends whole from
then on, through a partial index that holds only those rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import DatabaseError

from pinch.recall import index_of
from routing.models import RecallOriginal
from routing.models.recall import RESTORE_AFTER

log = logging.getLogger(__name__)

KEPT = "kept"
GONE = "gone"  # stored once, pushed out by a bound since (its handle stays)
UNKNOWN = "unknown"  # never stored for this conversation, or the conversation was purged
UNAVAILABLE = "unavailable"  # the database did not answer

_ANSWERS = {
    GONE: "The original of {handle} is no longer kept: the recall store's size limit "
    "pushed it out (the oldest originals go first). Run the tool again if you need it.",
    UNKNOWN: "No original is kept under {handle} in this conversation: it names no result "
    "the router trimmed, or the conversation's originals expired.",
    UNAVAILABLE: "The original of {handle} cannot be read right now (the router's store did "
    "not answer). Run the tool again if you need it.",
}


@dataclass(frozen=True)
class Recall:
    """What the store says of one handle: its ``status``, and the ``text`` when kept."""

    handle: str
    status: str
    text: str | None = None

    @property
    def answer(self) -> str:
        """What the model is told: the original, or a plain sentence saying why not."""
        if self.text is not None:
            return self.text
        return _ANSWERS[self.status].format(handle=self.handle)


def lookup(conversation: str, handle: str, pending: dict) -> Recall:
    """The original behind ``handle`` in ``conversation``, or why there is none.

    ``pending``: what this very request's pinch took out (PinchOutcome.recallable),
    which the model may ask for before the request's originals are stored.
    """
    if not isinstance(handle, str):
        return Recall(str(handle)[:40], UNKNOWN)
    if handle in pending:
        return Recall(handle, KEPT, pending[handle])
    if not conversation or index_of(handle) is None:
        return Recall(handle[:40], UNKNOWN)
    try:
        row = (
            RecallOriginal.objects.filter(conversation=conversation, handle=handle)
            .values_list("text", "evicted_at")
            .first()
        )
    except DatabaseError as error:
        log.warning("recall_unavailable reason=%s", type(error).__name__)
        return Recall(handle, UNAVAILABLE)
    if row is None:
        return Recall(handle, UNKNOWN)
    text, evicted_at = row
    if evicted_at is not None:
        return Recall(handle, GONE)
    return Recall(handle, KEPT, text)


def recalled_indexes(conversation: str | None) -> frozenset[int]:
    """The message indexes of the conversation's results the model recalled in
    ``RESTORE_AFTER`` requests or more (one indexed query); empty when there are none or
    the database does not answer."""
    if not conversation:
        return frozenset()
    try:
        handles = list(
            RecallOriginal.objects.filter(
                conversation=conversation, recalls__gte=RESTORE_AFTER
            ).values_list("handle", flat=True)
        )
    except DatabaseError as error:
        log.warning("recall_marks_unread reason=%s", type(error).__name__)
        return frozenset()
    return frozenset(i for i in map(index_of, handles) if i is not None)
