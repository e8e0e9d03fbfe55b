"""Stored Responses API answers: what ``previous_response_id`` continues from."""

from django.db import models
from django.utils import timezone

from routing.models.keys import ApiKey


class StoredResponse(models.Model):
    """A Responses API answer kept for ``previous_response_id`` and ``GET /v1/responses/{id}``.

    ``response_id`` is the router's own (``resp_`` + uuid4), never an
    upstream's. ``input_items`` holds only this request's input: the rest of
    the conversation is the chain of ``previous_response_id`` rows, all
    sharing ``chain_root`` (read in one query), each item stored once.
    ``chain_bytes`` is the whole conversation's size, bounded by
    ``responses.max_chain_bytes``. Rows from before the chain held their
    whole conversation and have no previous row.
    """

    response_id = models.CharField(max_length=100, unique=True)
    previous_response_id = models.CharField(max_length=100, blank=True, default="")
    chain_root = models.CharField(max_length=100, blank=True, default="")
    chain_bytes = models.BigIntegerField(default=0)
    api_key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.CASCADE, related_name="responses"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    input_items = models.JSONField(default=list)
    response = models.JSONField(help_text="The response object, output items included.")

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # Deleting the expired rows when a new one is kept.
            models.Index(fields=["expires_at"], name="stored_response_expiry_idx"),
            # A conversation's rows, read at once to continue it.
            models.Index(fields=["api_key", "chain_root"], name="stored_response_chain_idx"),
        ]

    def __str__(self):
        return self.response_id
