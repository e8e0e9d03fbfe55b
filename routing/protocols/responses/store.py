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
    """Everything a continuation from ``response_id`` starts with: each turn's input and output."""
    row = stored_response(api_key_id, response_id, param="previous_response_id")
    limit = current_config().responses.max_chain_bytes
    if row.chain_bytes > limit:
        raise RouterError(
            400,
            f"The conversation of {response_id!r} is {row.chain_bytes} bytes, over the limit "
            f"of {limit} (responses.max_chain_bytes): start a new one.",
            "conversation_too_long",
            "previous_response_id",
        )
    return _history(_chain(row))


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
