"""The one shape most of a decision's measurements share: a count that may not have been taken.

Most of what a decision row records (tokens before and after pinch, the
cache split, the agent's tool calls) is measured only on some requests: a
request pinch did not see, a provider that reported no usage, an older row.
NULL says "not measured", so a zero always means zero. routing/models.py,
forecast_columns.py and quality_columns.py declare their counts through this.
"""

from django.db import models


def measured_count(help_text: str = "") -> models.IntegerField:
    """A nullable integer column: NULL when the figure was not measured."""
    return models.IntegerField(null=True, blank=True, help_text=help_text)
