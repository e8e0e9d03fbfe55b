"""A conversation's state, read back from its row by whichever worker serves it.

Routing (routing.session_routing: the tier and held model) and pinch
(routing.pruning: the ledger) each keep a small state per conversation, in
the worker's memory (or Redis) and on the conversation's row
(routing/models/conversation.py, kept by routing.conversations as each
decision is recorded). A worker takes its own while the request follows on
from the one that saved it: then no other worker served the conversation
since. Otherwise another worker or instance may have, with no Redis between
them, and the conversation's state is the later of the worker's own and the
one its row holds. A served worker writes a row behind its answer
(routing/recording/writer.py): read before that, the row holds the turn
before, which is taken as any older state is. The prefix probe
(routing.prefix_probe) compares with the payload fingerprints on that same
row. A request reads the row at most once, its state columns in one query by
its unique key (``RecordedState``), whichever reader needs it first (the
recalled results pinch sends whole with them: routing.recall.store.restored).
A row that cannot be read is logged and taken as absent, as a lost state
always was.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import DatabaseError

from routing.conversations import STATE_FIELDS
from routing.models import Conversation

log = logging.getLogger(__name__)

# The columns read: the state, and the results pinch sends whole because they were
# recalled (routing.recall.store.restored), which a recall's write keeps on the row.
READ_FIELDS = (*STATE_FIELDS, "recall_restored")


class RecordedState:
    """The state columns of a conversation's row, read once per request.

    ``reader(column)`` is the ``read(key)`` that routing, pinch and the probe
    are given (None instead in a replay, which has no rows).
    """

    def __init__(self) -> None:
        self._rows: dict[str, dict[str, str]] = {}

    def reader(self, column: str) -> Callable[[str], str | None]:
        return lambda key: self.read(key, column)

    def read(self, key: str, column: str) -> str | None:
        """What the conversation's latest recorded request left in ``column``, or None."""
        if key not in self._rows:
            try:
                found = Conversation.objects.filter(key=key).values(*READ_FIELDS)
                self._rows[key] = next(iter(found), {})
            except DatabaseError as error:
                # Named by the reader that asked first; the others read it as absent too.
                log.warning("%s_unread reason=%s", column, type(error).__name__)
                self._rows[key] = {}
        return self._rows[key].get(column) or None


def latest(*states: Any) -> Any:
    """The most recent (by ``at``) of the states found, or None."""
    return max((s for s in states if s is not None), key=lambda s: s.at, default=None)


def read_back(stored: Any, follows: bool, read: Callable | None, key: str, parse: Callable) -> Any:
    """``stored`` (this worker's) when the request ``follows`` on from it, or when there are
    no rows to read (``read`` None: a replay); else the later of it and ``parse(read(key))``."""
    if read is None or (stored is not None and follows):
        return stored
    return latest(stored, parse(read(key)))
