"""The decision's quality-signal columns, apart so routing/models.py stays small.

An abstract model RouteDecision inherits: what the agent did in the request
(routing/quality.py reads it from the messages; NULL: not measured), which
metrics/quality.py turns into re-fetch rates, errors after a prune and turns
per task.
"""

from django.db import models

from routing.columns import measured_count


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
