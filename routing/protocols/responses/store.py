"""Responses the router produced with ``store: true``: kept, continued from, read, deleted.

A response belongs to the API key that made it: another key's id is as
unknown as a made-up one. An expired or deleted id is a 404 that says so,
never a silent fresh start: a client continuing a conversation that the
router no longer has must learn it, not get an answer without its context.

Each row keeps only its own request's input and its output; a continuation
is the chain of rows back to the first (``chain_root``), read in one query.
Copying the whole conversation into every row once took a worker to 2.26 GB
and the database up by 1.5 GB for 25 requests of 4 MB. A chain past
``responses.max_chain_bytes`` is not continued. Rows are written with their
decision, in its transaction or its spool line (routing/recording/stored.py):
this module only reads them.
"""

import ctypes
import functools
import threading
import time

from django.core.signals import request_finished
from django.db.models import Q
from django.utils import timezone

from routing.config.store import current_config
from routing.errors import RouterError
from routing.models import StoredResponse


def _not_found(response_id: str, param=None) -> RouterError:
    return RouterError(
        404,
        f"No response with id {response_id!r}: it was never stored (store: false), "
        "has expired, was deleted, or belongs to another API key.",
        "previous_response_not_found" if param else "response_not_found",
        param,
    )


def stored_response(api_key_id, response_id: str, param=None) -> StoredResponse:
    """The live stored response of this key, else RouterError(404)."""
    row = StoredResponse.objects.filter(
        response_id=response_id, api_key_id=api_key_id, expires_at__gt=timezone.now()
    ).first()
    if row is None:
        raise _not_found(response_id, param)
    return row


def _chain(row: StoredResponse) -> list[StoredResponse]:
    """The conversation's rows, first to ``row``; RouterError(404) if one is gone."""
    if not row.previous_response_id:
        return [row]
    rows = {
        other.response_id: other
        # The root by its id too: a row from before the chain holds no chain_root.
        for other in StoredResponse.objects.filter(
            Q(chain_root=row.chain_root) | Q(response_id=row.chain_root),
            api_key_id=row.api_key_id,
            expires_at__gt=timezone.now(),
        )
    }
    rows[row.response_id] = row
    chain, seen = [row], {row.response_id}
    while chain[-1].previous_response_id:
        previous = rows.get(chain[-1].previous_response_id)
        if previous is None or previous.response_id in seen:
            raise _not_found(chain[-1].previous_response_id, "previous_response_id")
        seen.add(previous.response_id)
        chain.append(previous)
    chain.reverse()
    return chain


def _history(chain: list[StoredResponse]) -> list:
    items = []
    for row in chain:
        items += row.input_items
        items += row.response.get("output") or []
    return items


def conversation_items(api_key_id, response_id: str) -> list:
    """Everything a continuation from ``response_id`` starts with: each turn's input and output.

    The chain's bytes are held from the worker's ``chain_gate`` until the request ends.
    """
    row = stored_response(api_key_id, response_id, param="previous_response_id")
    config = current_config().responses
    limit = config.max_chain_bytes
    if row.chain_bytes > limit:
        raise RouterError(
            400,
            f"The conversation of {response_id!r} is {row.chain_bytes} bytes, over the limit "
            f"of {limit} (responses.max_chain_bytes): start a new one.",
            "conversation_too_long",
            "previous_response_id",
        )
    chain_gate.hold(row.chain_bytes, config.max_chain_bytes_in_flight)
    return _history(_chain(row))


class ChainGate:
    """The bytes of stored chains a process holds for its requests in flight, bounded.

    A continuation loads its whole chain and the request carries it (history,
    translation, the upstream's body) until its answer ends: about four times
    the stored bytes. Eight continuations at once of one 16 MB chain took a
    worker to 634 MB and sixteen to 1.25 GB, and glibc kept 1.06 GB of it
    afterwards (bench/bench_chain_memory.py; issue 43 measured 1.64 and 3.99
    GB). So a request holds its chain's bytes from here until Django closes
    its response (``request_finished``, on the thread that served it); one
    that would take the process past ``limit`` waits for others to end, at
    most ``WAIT_SECONDS``, then gets 503 ``server_busy`` with a Retry-After
    (which the SDKs honour). A chain larger than the limit goes alone. When
    the last hold ends, freed memory goes back to the system (``malloc_trim``).
    """

    # Longer than a continuation usually takes, shorter than a client's patience.
    WAIT_SECONDS = 30.0

    def __init__(self):
        self._changed = threading.Condition()
        self._held = 0
        self._mine = threading.local()

    def hold(self, nbytes: int, limit: int) -> None:
        nbytes = min(nbytes, limit)
        deadline = time.monotonic() + self.WAIT_SECONDS
        with self._changed:
            while self._held and self._held + nbytes > limit:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RouterError(
                        503,
                        "The router is busy with other continuations of stored conversations "
                        "(responses.max_chain_bytes_in_flight); retry shortly.",
                        "server_busy",
                        headers={"Retry-After": "5"},
                    )
                self._changed.wait(left)
            self._held += nbytes
        self._mine.held = getattr(self._mine, "held", 0) + nbytes

    def release(self, **_signal) -> None:
        """Give back what this thread's request held (Django's ``request_finished``)."""
        nbytes = getattr(self._mine, "held", 0)
        if not nbytes:
            return
        self._mine.held = 0
        with self._changed:
            self._held -= nbytes
            self._changed.notify_all()
        _return_freed_memory()

    @property
    def held(self) -> int:
        return self._held


def _return_freed_memory() -> None:
    """Hand the heap's free pages back to the system (glibc keeps them otherwise)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None


chain_gate = ChainGate()
request_finished.connect(chain_gate.release, dispatch_uid="responses_chain_gate")


def delete_response(api_key_id, response_id: str) -> None:
    deleted, _ = StoredResponse.objects.filter(
        response_id=response_id, api_key_id=api_key_id
    ).delete()
    if not deleted:
        raise _not_found(response_id)


# GET /v1/responses/{id}/input_items: at most this many a page (the API's bounds).
MAX_PAGE = 100
DEFAULT_PAGE = 20


def _listed(index: int, item: dict, seen: set) -> dict:
    """An input item as the API lists it: with an id no other item of the list has (the
    ``after`` cursor finds it, so pages end), a message's text as a part."""
    item_id = item.get("id") if isinstance(item.get("id"), str) else None
    if not item_id or item_id in seen:
        item_id = f"item_{index}"
        while item_id in seen:
            item_id += "_"
    seen.add(item_id)
    listed = {**item, "id": item_id}
    listed.setdefault("type", "message")
    if listed["type"] == "message" and isinstance(listed.get("content"), str):
        kind = "output_text" if listed.get("role") == "assistant" else "input_text"
        listed["content"] = [{"type": kind, "text": listed["content"]}]
    return listed


def input_items_page(api_key_id, response_id: str, query) -> dict:
    """One page of a stored response's input items (``after``, ``limit``, ``order`` as the API)."""
    row = stored_response(api_key_id, response_id)
    order = query.get("order") or "desc"
    try:
        limit = int(query.get("limit") or DEFAULT_PAGE)
    except ValueError:
        limit = 0
    if order not in ("asc", "desc") or not 1 <= limit <= MAX_PAGE:
        raise RouterError(
            400, f"order must be asc or desc and limit 1 to {MAX_PAGE}", "invalid_request", "limit"
        )
    chain = _chain(row)
    # Its input: the turns before it (input and output), then its own input.
    inputs = [*_history(chain[:-1]), *row.input_items]
    seen = set()
    items = [_listed(i, item, seen) for i, item in enumerate(inputs) if isinstance(item, dict)]
    if order == "desc":
        items.reverse()
    after = query.get("after")
    if after:
        ids = [item["id"] for item in items]
        if after not in ids:
            raise RouterError(
                404, f"No input item {after!r} in {response_id!r}.", "not_found", "after"
            )
        items = items[ids.index(after) + 1 :]
    page = items[:limit]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(items) > limit,
    }
