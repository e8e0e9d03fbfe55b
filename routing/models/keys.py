"""Router keys: who may call the router, and the limits each key carries.

Router keys are stored only as a SHA-256 hash (they are long random tokens,
so a fast hash is enough to make a leaked table useless); provider keys are
never stored at all.
"""

import hashlib
import secrets

from django.db import models
from django.utils import timezone

KEY_PREFIX = "rk-"


def hash_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


PERIOD_DAY, PERIOD_WEEK, PERIOD_MONTH = "day", "week", "month"
BUDGET_PERIODS = [(PERIOD_DAY, "day"), (PERIOD_WEEK, "week"), (PERIOD_MONTH, "month")]


class ApiKeyQuerySet(models.QuerySet):
    def active(self):
        return self.filter(revoked_at__isnull=True)


class ApiKey(models.Model):
    name = models.CharField(max_length=100)
    prefix = models.CharField(
        max_length=16, help_text="The key's first characters, to recognise it."
    )
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    is_staff = models.BooleanField(
        default=False, help_text="May also read the admin snapshot (/admin/api/snapshot)."
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    # Limits (routing/limits/): empty means unlimited. Changed only through
    # routing.limits.settings.set_key_limits, which checks and logs them.
    rpm_limit = models.PositiveIntegerField(
        "requests per minute", null=True, blank=True, help_text="Empty: no limit."
    )
    tpm_limit = models.PositiveIntegerField(
        "prompt tokens per minute",
        null=True,
        blank=True,
        help_text="Measured after pinch (what is sent). Empty: no limit.",
    )
    budget_usd = models.FloatField(
        "budget (USD)",
        null=True,
        blank=True,
        help_text="Hard limit per period: past it, requests are refused. Empty: none.",
    )
    soft_budget_usd = models.FloatField(
        "soft budget (USD)",
        null=True,
        blank=True,
        help_text="Past it, answers carry a warning header (and auto may go a tier cheaper).",
    )
    budget_period = models.CharField(
        max_length=8,
        choices=BUDGET_PERIODS,
        default=PERIOD_MONTH,
        help_text="A month starts on objective.billing_reset_day (the 1st when unset).",
    )
    budget_fallback = models.BooleanField(
        default=False, help_text="Past the soft budget, auto requests go to the next cheaper tier."
    )

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name = "API key"
        ordering = ["-created_at"]
        # Staff is not enough to change what a key may spend (superusers hold it).
        permissions = [("change_key_limits", "Can change API keys' budgets and rate limits")]

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self):
        return self.revoked_at is None

    @staticmethod
    def generate_raw_key() -> str:
        return KEY_PREFIX + secrets.token_urlsafe(32)
