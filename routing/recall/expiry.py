"""How long the recall store keeps a conversation's originals: as long as the conversation.

A conversation can go on as long as its row lives, and ``purge_decisions``
deletes the rows of conversations idle as long as the decisions it purges
(31 days at least: longer than any provider keeps a cached prefix). Their
originals go first, in short batches (a statement holds the write lock for
a few milliseconds, as the decisions' purge does), each batch subtracting
what it freed from the store's total (RecallUsage).
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from routing.models import Conversation, RecallOriginal, RecallUsage
from routing.recall.keeping import shard_of

PURGE_BATCH = 2000  # originals a statement: several KB each, a few ms of lock
KEYS_BATCH = 500  # idle conversations named in one statement


def forget_idle_originals(days: int, batch: int = PURGE_BATCH) -> int:
    """Delete the originals of the conversations idle for ``days`` days (run before their
    rows go: routing.conversations.forget_idle); returns how many went."""
    if days < 1:
        raise ValueError("days must be at least 1")
    idle = Conversation.objects.filter(last_at__lt=timezone.now() - timedelta(days=days))
    deleted, after = 0, 0
    while True:
        page = list(idle.filter(id__gt=after).order_by("id").values_list("id", "key")[:KEYS_BATCH])
        if not page:
            return deleted
        after = page[-1][0]
        keys = [key for _, key in page]
        while removed := _delete_batch(keys, batch):
            deleted += removed


def _delete_batch(keys: list[str], batch: int) -> int:
    with transaction.atomic():
        rows = list(
            RecallOriginal.objects.select_for_update()
            .filter(conversation__in=keys)
            .order_by("id")
            .values_list("id", "size", "conversation")[:batch]
        )
        if not rows:
            return 0
        RecallOriginal.objects.filter(id__in=[pk for pk, _, _ in rows]).delete()
        freed: dict[int, int] = {}
        for _, size, conversation in rows:
            shard = shard_of(conversation)
            freed[shard] = freed.get(shard, 0) + size
        for shard, size in sorted(freed.items()):
            if size:
                RecallUsage.objects.filter(shard=shard).update(bytes=F("bytes") - size)
    return len(rows)
