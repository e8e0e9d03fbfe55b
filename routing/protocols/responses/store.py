"""Responses the router produced with ``store: true``: kept, continued from, read, deleted.

A response belongs to the API key that made it: another key's id is as
unknown as a made-up one. An expired or deleted id is a 404 that says so,
never a silent fresh start: a client continuing a conversation that the
router no longer has must learn it, not get an answer without its context.
"""

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

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


def keep_response(api_key_id, input_items: list, response: dict, ttl_hours: float) -> None:
    """Store a finished response; expired rows go at the same time."""
    now = timezone.now()
    with transaction.atomic():
        StoredResponse.objects.filter(expires_at__lte=now).delete()
        StoredResponse.objects.update_or_create(
            response_id=response["id"],
            defaults={
                "api_key_id": api_key_id,
                "created_at": now,
                "expires_at": now + timedelta(hours=ttl_hours),
                "input_items": input_items,
                "response": response,
            },
        )


def stored_response(api_key_id, response_id: str, param=None) -> StoredResponse:
    """The live stored response of this key, else RouterError(404)."""
    row = StoredResponse.objects.filter(
        response_id=response_id, api_key_id=api_key_id, expires_at__gt=timezone.now()
    ).first()
    if row is None:
        raise _not_found(response_id, param)
    return row


def conversation_items(api_key_id, response_id: str) -> list:
    """Everything a continuation from ``response_id`` starts with: its input, then its output."""
    row = stored_response(api_key_id, response_id, param="previous_response_id")
    return [*row.input_items, *(row.response.get("output") or [])]


def delete_response(api_key_id, response_id: str) -> None:
    deleted, _ = StoredResponse.objects.filter(
        response_id=response_id, api_key_id=api_key_id
    ).delete()
    if not deleted:
        raise _not_found(response_id)


# GET /v1/responses/{id}/input_items: at most this many a page (the API's bounds).
MAX_PAGE = 100
DEFAULT_PAGE = 20


def _listed(index: int, item: dict) -> dict:
    """An input item as the API lists it: with an id, a message's text as a part."""
    listed = {**item, "id": item.get("id") or f"item_{index}"}
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
    items = [_listed(i, item) for i, item in enumerate(row.input_items)]
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
