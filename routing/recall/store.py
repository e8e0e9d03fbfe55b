"""Reading the recall store: the original behind a handle, and what the model recalled.

The loop that answers ``router_recall`` asks ``lookup``:
this request's own originals first (``pending``: PinchOutcome.recallable,
which holds every result its payload carries compressed, so most recalls
never reach the database), then the originals of this process's rows still
queued for its writer (``hold``: a served worker writes its rows behind the
answers, routing/recording/writer.py), then the conversation's stored rows
(routing/models/recall.py), which every worker and instance sharing the
database sees. A database that cannot answer degrades to "not available",
logged: a recall never fails a request.

A row queued by another worker or instance is in none of these until its
writer commits it, within ``writer.WRITTEN_WITHIN_SECONDS`` of its queueing
(``rows_written_behind``: set as a served worker starts its writer).
Every row a request can recall from was queued before the request reached
its recall loop (a row is queued before its answer's last byte goes out,
so before the client can send the next request), so a miss reads the store
again until that long after the loop started, then answers "unknown". Only
a miss waits (a handle the client dropped from its history, or one the
model made up), only in a served worker (where rows are written behind),
and only what is left of that bound: an upstream's first answer usually
takes longer, so the loop mostly starts past it and reads once.

What a recall teaches pinch (docs/pinch.md, "Recall") is the conversation's
results the model recalled in ``RESTORE_AFTER`` requests or more, which pinch
sends whole from then on. ``restored_in_store`` reads them from the store
(through a partial index that holds only those rows) when a recall is
recorded (routing/recall/keeping.py), which keeps them on the conversation's
row and in the workers' state store; ``restored`` gives them to planning
without a query while the worker's state follows on from the request before
(issue 42: the read was ~1 ms of every request, recalls or not).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.db import DatabaseError

from pinch.recall import index_of
from routing.models import RecallOriginal
from routing.models.recall import RESTORE_AFTER

log = logging.getLogger(__name__)

# How often a miss reads the store again while a row may still be queued elsewhere.
REREAD_SECONDS = 0.05

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


# How long after its queueing a row reaches the store; 0 where rows are written before
# their answers (no writer runs: tests, commands, runserver).
_behind = {"seconds": 0.0}
# (conversation, handle) -> the original as the store will keep it ("": kept as gone),
# of this process's rows queued for its writer; each dict operation is atomic.
_queued: dict[tuple[str, str], str] = {}


def rows_written_behind(seconds: float) -> None:
    """Rows reach the store up to ``seconds`` after they are queued (a served worker's, and
    its siblings'): a miss reads the store again until then."""
    _behind["seconds"] = seconds


def hold(conversation: str, originals: dict) -> None:
    """Answer recalls of ``originals`` from memory while their row waits for the writer."""
    _queued.update({(conversation, handle): text for handle, text in originals.items()})


def release(conversation: str, handles) -> None:
    """The row of these originals is written (or spooled): the store answers from now on."""
    for handle in handles:
        _queued.pop((conversation, handle), None)


def lookup(conversation: str, handle: str, pending: dict, asked_at: float = 0.0) -> Recall:
    """The original behind ``handle`` in ``conversation``, or why there is none.

    ``pending``: what this very request's pinch took out (PinchOutcome.recallable),
    which the model may ask for before the request's originals are stored.
    ``asked_at``: when the request's recall loop started (``time.monotonic()``); a miss
    reads the store again until every row queued before it is written.
    """
    if not isinstance(handle, str):
        return Recall(str(handle)[:40], UNKNOWN)
    if handle in pending:
        return Recall(handle, KEPT, pending[handle])
    if not conversation or index_of(handle) is None:
        return Recall(handle[:40], UNKNOWN)
    # Memory before the store: a row is released from it only once committed, so one
    # missed here and then in the store was not queued here.
    queued = _queued.get((conversation, handle))
    if queued is not None:
        return Recall(handle, KEPT, queued) if queued else Recall(handle, GONE)
    deadline = asked_at + _behind["seconds"]
    while True:
        try:
            row = (
                RecallOriginal.objects.filter(conversation=conversation, handle=handle)
                .values_list("text", "evicted_at")
                .first()
            )
        except DatabaseError as error:
            log.warning("recall_unavailable reason=%s", type(error).__name__)
            return Recall(handle, UNAVAILABLE)
        left = deadline - time.monotonic()
        if row is not None or left <= 0:
            break
        time.sleep(min(left, REREAD_SECONDS))
    if row is None:
        return Recall(handle, UNKNOWN)
    text, evicted_at = row
    if evicted_at is not None:
        return Recall(handle, GONE)
    return Recall(handle, KEPT, text)


def restored(key: str, lengths, store, recorded) -> frozenset[int]:
    """The results of conversation ``key`` that pinch sends whole because they were recalled.

    ``store`` (the prefix probe's: this worker's memory, or Redis) holds them as
    ``"<length>:<indexes>"``, saved as each request is planned and updated when a
    recall is recorded: trusted when ``<length>`` is one of ``lengths``
    (routing.pruning.turn_lengths: saved by the request just before, or by this
    one), as the ledger is; else the conversation's row, ``recorded(key)``
    (routing.conversation_state: read once with its state), says.
    """
    raw = store.load_restored(key)
    length, _, text = (raw or "").partition(":")
    if not (length.isdigit() and int(length) in lengths):
        text = recorded(key) or ""
    store.save_restored(key, f"{lengths[-1]}:{text}")
    return restored_indexes(text)


def restored_text(indexes) -> str:
    """Message indexes as the conversation's row and the state store keep them."""
    return ",".join(map(str, sorted(indexes)))


def restored_indexes(text: str) -> frozenset[int]:
    """``restored_text``'s inverse; anything malformed is left out."""
    return frozenset(int(part) for part in text.split(",") if part.isascii() and part.isdigit())


def restored_in_store(conversation: str) -> frozenset[int]:
    """The message indexes of the conversation's results the model recalled in
    ``RESTORE_AFTER`` requests or more, from the store (one indexed query); raises what the
    database raises. Called when a recall is recorded (routing/recall/keeping.py)."""
    handles = RecallOriginal.objects.filter(
        conversation=conversation, recalls__gte=RESTORE_AFTER
    ).values_list("handle", flat=True)
    return frozenset(i for i in map(index_of, handles) if i is not None)
