"""A conversation as a record of its own: one row, updated in place as each decision is recorded.

The decision row (RouteDecision) is the log of one request. What belongs to
the conversation lives here, like django.contrib.sessions keeps a session:

* its state, which any worker or instance reads back to serve the next
  request as the one that served the last did (routing.conversation_state):
  the routing state, pinch's ledger and the payload fingerprints;
* what it holds and who it is: the router key, the agent session, the arm,
  the model and tier of its last request;
* its running totals (routing.conversations.TOTALS), so that the sessions
  view and the per-conversation figures read one row per conversation
  instead of summing every decision.

A conversation is keyed by the decision's ``conversation`` hash
(routing.prefix_probe.conversation_key), whose seed holds the router key's
id: two keys never share a row, even with the same agent session id or the
same opening messages.
"""

from django.db import models


def _total(help_text: str) -> models.BigIntegerField:
    return models.BigIntegerField(default=0, help_text=help_text)


class Conversation(models.Model):
    key = models.CharField(
        max_length=32,
        unique=True,
        help_text="The decisions' conversation hash (the router key is in its seed).",
    )
    api_key = models.ForeignKey(
        "routing.ApiKey",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="conversations",
    )
    session = models.CharField(max_length=200, blank=True, help_text="The agent session.")
    agent = models.CharField(max_length=32, blank=True)
    arm = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=200, blank=True, help_text="Its last request's model.")
    tier = models.CharField(max_length=50, blank=True)
    # Every model its requests went to, each between bars: "|gpt-4.1|gpt-4.1-mini|".
    models_used = models.TextField(blank=True)

    # Its state, read back by a worker that did not serve its last request
    # (routing.conversation_state): the last non-blank value each request left.
    route_state = models.TextField(
        blank=True,
        help_text="The routing state (tier, model, where its task began, when): "
        "routing.session_routing.",
    )
    pinch_ledger = models.TextField(
        blank=True, help_text="Pinch's ledger (pinch/ledger.py: what is decided, when)."
    )
    payload_fingerprints = models.TextField(
        blank=True,
        help_text="The last payload's per-message hashes, shortened (pinch.prefix.packed), for "
        "the prefix probe; blanked a day after the last request.",
    )
    recall_restored = models.TextField(
        blank=True,
        help_text="The message indexes of its results the model recalled in two requests or "
        "more, comma-separated, which pinch sends whole (routing.recall.store.restored); "
        "set when a recall is recorded, so planning reads it with the state.",
    )

    first_at = models.DateTimeField(help_text="Its first decision.")
    last_at = models.DateTimeField(help_text="Its latest decision: whose state it holds.")
    last_status = models.IntegerField(null=True, blank=True)
    last_answer_tool_calls = models.BooleanField(
        null=True, blank=True, help_text="Its latest answer asked for tool calls (NULL: not seen)."
    )

    # Running totals (routing.conversations.TOTALS says what each adds up).
    requests = _total("Decisions recorded.")
    failed_requests = _total("Of those, answered with an error (or never answered).")
    turns = _total("Requests of its main conversation in which the user spoke.")
    subagent_requests = _total("Requests of a subagent (Claude Code's Agent tool).")
    background_requests = _total("Background requests (titles, summaries).")
    tokens_sent = _total("Estimated prompt tokens sent, after pinch.")
    tokens_saved = _total("Prompt tokens pinch removed.")
    billed_requests = _total("Requests whose provider reported usage (both costs known).")
    billed_usd = models.FloatField(default=0.0, help_text="Prompt cost as billed.")
    unpruned_usd = models.FloatField(
        default=0.0, help_text="Estimated prompt cost without pinch, of the billed requests."
    )
    net_saved_usd = models.FloatField(
        default=0.0, help_text="Unpruned minus billed cost, of the billed requests."
    )
    quality_calls = _total("Tool calls in the agent's messages.")
    quality_repeats_compressed = _total("Repeats of a call whose result it saw compressed.")
    quality_repeats_whole = _total("Repeats of a call whose result it saw whole.")
    quality_seen_compressed = _total("Tool results seen compressed, per turn.")
    quality_seen_whole = _total("Tool results seen whole, per turn.")
    quality_results = _total("Tool results.")
    quality_errors = _total("Tool results that report an error.")

    class Meta:
        ordering = ["-last_at"]
        indexes = [
            # The sessions view (routing.agent_sessions): the newest conversations, and
            # those active since a date; the last answers of a window.
            models.Index(fields=["last_at"], name="conversation_last_idx"),
            # One session's conversations (a session's models).
            models.Index(fields=["session"], name="conversation_session_idx"),
            # The sessions view's "dearer first": the conversations pinch made dearest.
            models.Index(fields=["net_saved_usd", "id"], name="conversation_net_idx"),
        ]

    def __str__(self):
        return f"{self.key} ({self.session or 'no session'})"
