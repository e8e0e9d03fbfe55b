"""The recall store's rows: what pinch took out of a conversation, kept so the model can ask.

One row per (conversation, handle): the original text of a tool result pinch
compressed or capped, under the handle its replacement names
(pinch/recall.py). Rows live in the database so that every worker and every
instance sharing it can answer a recall. A row pushed out by the store's
bounds keeps its handle with no text (``evicted_at`` set), so a recall of it
says plainly that it is gone rather than that it never was
(routing/recall/store.py). ``RecallUsage`` holds the store's running total
in a few counter rows, so the total bound is checked without a scan.
"""

from django.db import models
from django.db.models import Q

# Recalled in this many requests, a result is sent whole again: measured on the corpus,
# restoring at the first recall cost more than it saved, at the second it paid
# (docs/pinch.md, "Recall"; bench/recall_choice.py).
RESTORE_AFTER = 2


class RecallOriginal(models.Model):
    conversation = models.CharField(
        max_length=32, help_text="The decisions' conversation hash (Conversation.key)."
    )
    handle = models.CharField(max_length=16, help_text="The handle the trimmed text names.")
    text = models.TextField(blank=True, help_text="The original; blank once evicted.")
    size = models.BigIntegerField(default=0, help_text="Bytes of the text (UTF-8); 0 once evicted.")
    created_at = models.DateTimeField()
    evicted_at = models.DateTimeField(
        null=True, blank=True, help_text="When a bound pushed it out (its text went)."
    )
    recalled_at = models.DateTimeField(
        null=True, blank=True, help_text="When the model first recalled it."
    )
    recalls = models.PositiveIntegerField(
        default=0, help_text="Requests in which the model recalled it (pinch learns from it)."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "handle"], name="recall_handle_uniq")
        ]
        indexes = [
            # The total bound: the oldest originals still held, in id order.
            models.Index(fields=["id"], name="recall_held_idx", condition=Q(size__gt=0)),
            # The conversation's results recalled again, read once per request: pinch sends
            # them whole (routing.recall.store.restored_in_store).
            models.Index(
                fields=["conversation"],
                name="recall_restored_idx",
                condition=Q(recalls__gte=RESTORE_AFTER),
            ),
        ]

    def __str__(self):
        return f"{self.conversation}/{self.handle}"


class RecallUsage(models.Model):
    """Bytes held by the store, in shards: a writer adds to its conversation's shard
    only, so two writers rarely wait on one row; the total is the sum of a few rows."""

    shard = models.PositiveSmallIntegerField(unique=True)
    bytes = models.BigIntegerField(default=0)

    def __str__(self):
        return f"shard {self.shard}: {self.bytes} bytes"
