"""Writing the recall store: a request's new originals, inside its decision's transaction.

The originals ride on the decision's fields (``ORIGINALS``) from the moment
the request is planned, so they take the decision's durable path: written by
the one insert (routing/recording/inserts.py) in the row's transaction, or
spooled with the row when the database is down and drained with it. Only the
handles new in this request travel: pinch decides a result's fate once and
never revisits it, so a result compressed before this request's stable
prefix was compressed the same way on the request before, and stored then
(routing/pruning.py, ``_to_store``). A handle already held is left as it is.

Bounds, both from ``pinch.recall``: per conversation
(``max_conversation_bytes``) and in all (``max_total_bytes``), the oldest
originals pushed out first. The total is a few counter rows (RecallUsage),
each writer adding to its conversation's shard, so no write scans the table
or waits on one hot row; an eviction takes only rows no other writer holds
(SKIP LOCKED on PostgreSQL), and subtracts what it freed from the writer's
own shard, so two writers never lock each other's counters. An evicted row
keeps its handle, so a recall of it says it is gone.

The store's write is a savepoint inside the decision's transaction: if it
fails, it is logged (``recall_store_failed``) and the decision row is kept all
the same; the recall of those originals then says they are not kept.
"""

from __future__ import annotations

import logging
import zlib
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import F, Sum, Value
from django.db.models.functions import Coalesce

from pinch.ledger import Ledger
from pinch.payback import CacheModel, book_recalls
from routing.config.pinch_blocks import RecallConfig
from routing.config.store import current_config
from routing.models import Conversation, RecallOriginal, RecallUsage
from routing.prefix_probe import prefix_probe
from routing.recall import store
from routing.recall.store import restored_in_store, restored_text

log = logging.getLogger(__name__)

# The decision fields the store reads; neither is a column of the decision row.
ORIGINALS = "recall_originals"  # handle -> original text, new in this request
RECALLED = "recall_recalled"  # the handles the router's recall tool answered
FIELDS = (ORIGINALS, RECALLED)

# Counter rows of the total: enough that writers of different conversations
# rarely share one; few enough that the total is a read of a handful of rows.
SHARDS = 8
# Eviction candidates read at a time: an original is usually several KB, so
# one batch frees what a request added.
EVICT_BATCH = 64


def decision_fields(to_store: dict) -> dict:
    """The fields a decision carries for the store: this request's new originals (text a
    journal or spool line can hold: a lone surrogate from a client's JSON becomes U+FFFD)."""
    return {ORIGINALS: {h: _writable(t) for h, t in to_store.items()}} if to_store else {}


def _writable(text: str) -> str:
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def note_recalled(fields: dict, handles) -> None:
    """Add the handles the recall tool answered to a decision's fields: marked recalled
    when the row is written, so pinch learns from them (routing/recall/store.py)."""
    if handles:
        fields[RECALLED] = sorted({*fields.get(RECALLED, ()), *handles})


def book_round_trips(fields: dict, cache: CacheModel | None, sizes: list[int]) -> None:
    """Book a request's recall round trips on its conversation's pinch ledger, as the
    replay does (``pinch.payback.book_recalls``): on the row, which leaves it to the
    conversation, and in the workers' state store, so the next request's plan counts them
    whichever worker serves it."""
    if cache is None or not sizes:
        return  # no recall: the ledger is left as it is, unread
    ledger = Ledger.from_json(fields.get("pinch_ledger"))
    if ledger is None:
        return
    raw = book_recalls(ledger, cache, fields.get("measured_tokens") or 0, sizes).as_json()
    fields["pinch_ledger"] = raw
    if fields.get("conversation"):
        prefix_probe(settings.REDIS_URL).save_ledger(fields["conversation"], raw)


def shard_of(conversation: str) -> int:
    return zlib.crc32(conversation.encode()) % SHARDS


def keep(rows: list[dict], bounds: RecallConfig | None = None) -> None:
    """Store the new originals of each inserted decision and mark its recalled handles,
    within the bounds; call inside the transaction that inserts the rows.

    ``bounds``: the current config's ``pinch.recall`` when None (read only when a
    row carries something for the store). Never raises a database error.
    """
    work = [row for row in rows if row.get("conversation") and any(row.get(f) for f in FIELDS)]
    if not work:
        return
    try:
        if bounds is None:
            bounds = current_config().pinch.recall
        # A savepoint: a failure here rolls back the store's part only.
        with transaction.atomic():
            for row in work:
                conversation, at = row["conversation"], row["created_at"]
                # Marks first: they may wait on a row another writer is evicting, which
                # must not be while holding a counter that writer waits for.
                if row.get(RECALLED):
                    mark_recalled(conversation, row[RECALLED], at)
                    _note_restored(conversation)
                if row.get(ORIGINALS):
                    _store(conversation, row[ORIGINALS], at, bounds)
    except DatabaseError as error:
        log.warning("recall_store_failed reason=%s: %s", type(error).__name__, error)


def mark_recalled(conversation: str, handles, at: datetime) -> int:
    """Count one more recall of each of the conversation's originals under ``handles``."""
    return RecallOriginal.objects.filter(
        conversation=conversation, handle__in=list(handles)
    ).update(recalls=F("recalls") + 1, recalled_at=Coalesce("recalled_at", Value(at)))


def _note_restored(conversation: str) -> None:
    """Keep the results pinch now sends whole (routing.recall.store.restored) on the
    conversation's row, and, once committed, in the workers' state store: planning reads
    them there, so only a request that recalled something queries the store for them."""
    text = restored_text(restored_in_store(conversation))
    Conversation.objects.filter(key=conversation).update(recall_restored=text)

    def remember():
        probe = prefix_probe(settings.REDIS_URL)
        raw = probe.load_restored(conversation)
        if raw is not None:  # keep the length it was saved at: whether a request follows on
            probe.save_restored(conversation, f"{raw.partition(':')[0]}:{text}")

    transaction.on_commit(remember)


def queued(fields: dict, bounds: RecallConfig) -> None:
    """A row's originals are queued for the worker's writer (routing/recording/writer.py):
    this process's recalls read them from memory, as ``keep`` will store them within
    ``bounds``, until ``written``."""
    if fields.get(ORIGINALS) and fields.get("conversation"):
        originals = {
            h: _kept(t, bounds)[0] for h, t in fields[ORIGINALS].items() if isinstance(t, str)
        }
        store.hold(fields["conversation"], originals)


def written(fields: dict) -> None:
    """The row ``queued`` held is written, or spooled: recalls read the store again."""
    if fields.get(ORIGINALS) and fields.get("conversation"):
        store.release(fields["conversation"], fields[ORIGINALS])


def _kept(text: str, bounds: RecallConfig) -> tuple[str, int]:
    """An original as the store keeps it, and its bytes: ("", 0) when it is kept as gone from
    the start (empty, or over a bound: it would only push everything else out, then itself)."""
    text = text.replace("\x00", "")  # PostgreSQL's text refuses NUL
    size = len(text.encode("utf-8", "replace"))
    limit = min(bounds.max_conversation_bytes, bounds.max_total_bytes)
    return ("", 0) if size > limit else (text, size)


def _store(conversation: str, originals: dict, at: datetime, bounds: RecallConfig) -> None:
    held = set(
        RecallOriginal.objects.filter(
            conversation=conversation, handle__in=list(originals)
        ).values_list("handle", flat=True)
    )
    rows = []
    for handle, original in originals.items():
        if handle in held or not isinstance(original, str):
            continue
        text, size = _kept(original, bounds)
        if not size:
            rows.append(
                RecallOriginal(
                    conversation=conversation, handle=handle, created_at=at, evicted_at=at
                )
            )
            continue
        rows.append(
            RecallOriginal(
                conversation=conversation, handle=handle, text=text, size=size, created_at=at
            )
        )
    if not rows:
        return
    # Another writer of the same conversation may insert a handle first: then it is
    # counted twice, which errs towards evicting early, never towards the bound.
    RecallOriginal.objects.bulk_create(rows, ignore_conflicts=True)
    shard = shard_of(conversation)
    _add_to_shard(shard, sum(row.size for row in rows))
    mine = RecallOriginal.objects.filter(conversation=conversation, size__gt=0)
    over = (mine.aggregate(held=Sum("size"))["held"] or 0) - bounds.max_conversation_bytes
    freed = _evict(mine, over, at) if over > 0 else 0
    total = RecallUsage.objects.aggregate(total=Sum("bytes"))["total"] or 0
    over = total - freed - bounds.max_total_bytes
    if over > 0:
        freed += _evict(RecallOriginal.objects.filter(size__gt=0), over, at)
    if freed:
        _add_to_shard(shard, -freed)


def _add_to_shard(shard: int, size: int) -> None:
    if not size:
        return
    if not RecallUsage.objects.filter(shard=shard).update(bytes=F("bytes") + size):
        RecallUsage.objects.bulk_create([RecallUsage(shard=shard)], ignore_conflicts=True)
        RecallUsage.objects.filter(shard=shard).update(bytes=F("bytes") + size)


def _evict(held, over: int, at: datetime) -> int:
    """Push out the oldest of ``held`` until ``over`` bytes are freed; returns the bytes freed.

    Rows another writer holds are skipped, not waited for (SKIP LOCKED): that
    writer is pushing them out, or storing them, and will count them itself.
    """
    freed = 0
    while freed < over:
        batch = list(
            held.select_for_update(skip_locked=True)
            .order_by("id")
            .values_list("id", "size")[:EVICT_BATCH]
        )
        if not batch:
            break
        chosen = []
        for pk, size in batch:
            chosen.append(pk)
            freed += size
            if freed >= over:
                break
        RecallOriginal.objects.filter(id__in=chosen).update(text="", size=0, evicted_at=at)
    return freed
