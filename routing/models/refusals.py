"""Counters of requests a key's limits refused (they reach no upstream, so have no row)."""

from django.db import models
from django.utils import timezone

from routing.models.keys import ApiKey


class LimitRefusal(models.Model):
    """How many requests of a key its limits refused, by reason: one counter row per pair.

    Refused requests reach no upstream, so they have no decision row; this is
    what /metrics counts them from (several workers and hosts share it).
    """

    REASON_BUDGET = "budget"
    REASON_RPM = "rpm"
    REASON_TPM = "tpm"
    REASONS = [(REASON_BUDGET, "budget"), (REASON_RPM, "rpm"), (REASON_TPM, "tpm")]

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="refusals")
    reason = models.CharField(max_length=8, choices=REASONS)
    count = models.PositiveBigIntegerField(default=0)
    last_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["api_key", "reason"], name="refusal_key_reason_uniq")
        ]

    def __str__(self):
        return f"{self.api_key_id} {self.reason}: {self.count}"
