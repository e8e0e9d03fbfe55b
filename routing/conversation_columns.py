"""The conversation's state after a request, on its decision row (apart: routing/models.py
stays small).

An abstract model RouteDecision inherits. The state lives in each worker's
memory (or Redis) too; on the row it is what every worker and instance can
read, so that a worker that did not serve a conversation's last request
routes, prunes and measures it as the one that did (``left_by_last``, by the
(conversation, created_at) index).
"""

from django.db import models


class ConversationStateColumns(models.Model):
    # Read back together (routing.conversation_state.LastRow): by routing.session_routing,
    # routing.pruning and routing.prefix_probe.
    route_state = models.CharField(
        max_length=400,
        blank=True,
        help_text="The conversation's routing state after this request (tier, model, where "
        "its task began, when); background work carries it as it was.",
    )
    pinch_ledger = models.TextField(
        blank=True,
        help_text="Pinch's ledger for the conversation after this request (pinch/ledger.py: "
        "what is decided, where the cache was cold, when), which any worker reads back.",
    )
    payload_fingerprints = models.TextField(
        blank=True,
        help_text="The payload's per-message hashes, shortened (pinch.prefix.packed): what "
        "the prefix probe of a worker that did not serve this request compares the next with.",
    )

    class Meta:
        abstract = True
