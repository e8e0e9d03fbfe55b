"""Decisions that carry originals for the recall store, as the recording path holds them."""

from datetime import timedelta

from django.utils import timezone

from routing.models import RecallOriginal
from routing.recall.keeping import decision_fields as recall_fields
from routing.recall.keeping import note_recalled
from routing.recording.inserts import insert_decisions
from tests.support.decisions import spooled_fields


def carrying(conversation: str, originals: dict, recalled=(), age=timedelta(0)) -> dict:
    """A finished decision's fields with this request's new ``originals`` (handle -> text)
    and the handles its recall tool answered."""
    fields = spooled_fields(conversation=conversation, **recall_fields(originals))
    fields["created_at"] = timezone.now() - age
    note_recalled(fields, recalled)
    return fields


def record(conversation: str, originals: dict, recalled=(), age=timedelta(0)) -> dict:
    """Write one such decision through the one insert; the fields as written."""
    [row] = insert_decisions([carrying(conversation, originals, recalled, age)])
    return row


def held_bytes(conversation: str | None = None) -> int:
    """Bytes of the originals the store holds (of one conversation, or in all), counted."""
    rows = RecallOriginal.objects.filter(evicted_at__isnull=True)
    if conversation is not None:
        rows = rows.filter(conversation=conversation)
    return sum(len(text.encode()) for text in rows.values_list("text", flat=True))
