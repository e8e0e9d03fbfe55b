"""The decision's column groups: counts that may not have been measured, the cache forecast,
the quality signals.

Most of what a decision row records (tokens before and after pinch, the
cache split, the agent's tool calls) is measured only on some requests: a
request pinch did not see, a provider that reported no usage, an older row.
NULL says "not measured", so a zero always means zero: ``measured_count``.

``CacheForecastColumns``: the router's estimate of the prompt's cache split
(routing/cache_forecast.py), in its own token estimate (characters / 3), and
the verdict when the provider billed otherwise.

``QualityColumns``: what the agent did in the request (routing/quality.py
reads it from the messages), which metrics/quality.py turns into re-fetch
rates, errors after a prune and turns per task.
"""

from django.db import models


def measured_count(help_text: str = "") -> models.IntegerField:
    """A nullable integer column: NULL when the figure was not measured."""
    return models.IntegerField(null=True, blank=True, help_text=help_text)


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


class QualityColumns(models.Model):
    # What the agent did in this request (routing/quality.py, from the messages;
    # NULL: not measured). The agent's newest message is the one after its previous request.
    quality_calls = measured_count("Tool calls in the agent's newest message.")
    quality_repeats_compressed = measured_count(
        "Of those, repeats of an earlier call whose result the agent saw compressed."
    )
    quality_repeats_whole = measured_count("Repeats of an earlier call whose result it saw whole.")
    quality_seen_compressed = measured_count("Tool results it saw compressed before that message.")
    quality_seen_whole = measured_count("Tool results it saw whole before that message.")
    quality_results = measured_count("Tool results answering its newest message.")
    quality_errors = measured_count("Of those, results that report an error.")
    quality_task = measured_count(
        "Which user task of the conversation this request serves (1: the first)."
    )
    answer_tool_calls = models.BooleanField(
        null=True, blank=True, help_text="The answer asked for tool calls (NULL: not seen)."
    )

    class Meta:
        abstract = True
