"""A key's budget ledger per period: what it has spent and what its requests in flight may still
spend, the one place every worker and instance reserves from."""

from django.db import models

from routing.models.keys import ApiKey


class BudgetLedger(models.Model):
    """One key's period: settled spend and the worst cases of its requests in flight.

    A request is admitted only by a conditional UPDATE that keeps
    ``settled_usd + reserved_usd`` within the budget (routing/limits/ledger.py),
    so concurrent requests of every worker and instance cannot all take the
    last dollar. ``settled_usd`` starts from the key's recorded spend (KeySpend)
    when the period's first request reserves.
    """

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="ledgers")
    period_start = models.DateTimeField()
    settled_usd = models.FloatField(default=0.0, help_text="What answered requests cost.")
    reserved_usd = models.FloatField(
        default=0.0, help_text="The worst-case cost of the requests still in flight."
    )

    class Meta:
        constraints = [
            # Also the index every reservation reads: one key's current period.
            models.UniqueConstraint(fields=["api_key", "period_start"], name="ledger_key_period")
        ]

    def __str__(self):
        return f"{self.api_key_id} from {self.period_start:%Y-%m-%d}: {self.settled_usd:.4f}"
