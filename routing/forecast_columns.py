"""The decision's predicted-against-billed columns, apart so routing/models.py stays small.

An abstract model RouteDecision inherits: the router's estimate of the
prompt's cache split (routing/cache_forecast.py), in its own token estimate
(characters / 3), and the verdict when the provider billed otherwise.
"""

from django.db import models

from routing.columns import measured_count


class CacheForecastColumns(models.Model):
    predicted_cache_read_tokens = measured_count(
        "Prompt tokens the router expected read from the cache."
    )
    predicted_cache_write_tokens = measured_count(
        "Prompt tokens the router expected written to the cache."
    )
    predicted_uncached_tokens = measured_count("Prompt tokens the router expected sent uncached.")
    cache_cold = models.BooleanField(
        null=True,
        blank=True,
        help_text="The conversation's previous request was longer ago than the model's cache "
        "lifetime (NULL: no earlier request known).",
    )
    cache_surprise = models.CharField(
        max_length=8,
        blank=True,
        help_text="'miss': predicted warm, billed as written; 'hit': predicted cold, billed "
        "as read; empty: as predicted, or nothing to compare.",
    )
    cache_miss_reason = models.CharField(
        max_length=40, blank=True, help_text="The provider's reason for a cache miss, if given."
    )

    class Meta:
        abstract = True
