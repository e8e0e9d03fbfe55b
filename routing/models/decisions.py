"""The decision log: one append-only row per request that reached an upstream.

A conversation's running state is its own row (routing/models/conversation.py);
the figures the surfaces show are kept in the summary tables
(routing/models/summaries.py) as each row is written.
"""

from django.db import models
from django.db.models import ExpressionWrapper, F, Q
from django.utils import timezone

from routing.models.columns import CacheForecastColumns, QualityColumns, measured_count
from routing.models.keys import ApiKey

# What pinch did to a request, as the database computes it. The pinch columns
# are NULL when pinch was off for the request; a request is pruned when pinch
# sent fewer tokens than it was given.
PINCH_MEASURED = Q(pinch_original_tokens__isnull=False, pinch_final_tokens__isnull=False)
PRUNED = Q(pinch_original_tokens__gt=F("pinch_final_tokens"))
TOKENS_SAVED = ExpressionWrapper(
    F("pinch_original_tokens") - F("pinch_final_tokens"), output_field=models.IntegerField()
)
# Net of the cache: what the request would have cost unpruned minus what it cost.
NET_SAVED = ExpressionWrapper(
    F("unpruned_cost_usd") - F("billed_prompt_cost_usd"), output_field=models.FloatField()
)
BILLED = Q(billed_prompt_cost_usd__isnull=False, unpruned_cost_usd__isnull=False)
RECENT_DECISIONS = 50  # a screenful on the dashboard and in the TUI; older rows are in admin


def tokens_saved(original: int | None, final: int | None) -> int | None:
    """Tokens pinch removed from one request; None when pinch did not measure it."""
    if original is None or final is None:
        return None
    return max(original - final, 0)


class RouteDecisionQuerySet(models.QuerySet):
    """The filters every surface (summary, dashboard, Prometheus, admin, snapshot) shares."""

    def since(self, start):
        return self.filter(created_at__gte=start)

    def with_tokens_saved(self):
        """Annotate ``tokens_saved``: original minus final tokens (NULL when pinch was off)."""
        return self.annotate(tokens_saved=TOKENS_SAVED)

    def with_net_saved(self):
        """Annotate ``net_saved_usd``: estimated unpruned cost minus billed cost (NULL unknown)."""
        return self.annotate(net_saved_usd=NET_SAVED)

    def billed(self):
        """Rows whose provider reported usage, so both costs are known."""
        return self.filter(BILLED)

    def pruned(self):
        return self.filter(PRUNED)

    def not_pruned(self):
        """Measured by pinch and sent whole."""
        return self.filter(PINCH_MEASURED).exclude(PRUNED)

    def pinch_off(self):
        return self.exclude(PINCH_MEASURED)

    def recent(self, limit: int = RECENT_DECISIONS):
        return self.order_by("-created_at", "-id")[:limit]


SESSION_ROLE_CHOICES = [("main", "main"), ("subagent", "subagent"), ("background", "background")]


class RouteDecision(CacheForecastColumns, QualityColumns):
    PATH_ROUTED = "routed"
    PATH_PASSTHROUGH = "passthrough"
    PATH_CHOICES = [(PATH_ROUTED, "routed"), (PATH_PASSTHROUGH, "passthrough")]

    created_at = models.DateTimeField(default=timezone.now)
    path = models.CharField(max_length=16, choices=PATH_CHOICES)
    api_key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )
    requested_model = models.CharField(max_length=200)
    chosen_model = models.CharField(max_length=200)
    provider = models.CharField(max_length=100)
    upstream_model = models.CharField(max_length=200)
    tier = models.CharField(max_length=50, blank=True)
    classifier = models.CharField(
        max_length=32, blank=True, help_text="Which classifier decided the tier (routed path)."
    )
    measured_tokens = models.IntegerField(help_text="Estimated prompt tokens actually sent.")
    estimated_cost_usd = models.FloatField(help_text="Estimated prompt cost at the blended rate.")

    pinch_original_tokens = measured_count()
    pinch_final_tokens = measured_count()
    pinch_summarized = measured_count()
    pinch_tools = models.JSONField(
        null=True, blank=True, help_text="Tool results compressed, by tool name."
    )
    relevance_used = models.BooleanField(default=False)
    relevance_fallback = models.BooleanField(
        default=False, help_text="Relevance ordering was attempted and failed (uniform pruning)."
    )
    recalls = measured_count(
        "Calls of the router's recall tool it answered itself within this request."
    )
    recalled_tokens = measured_count("Tokens of the originals those recalls gave back.")
    prefix_match = measured_count()
    prefix_previous_length = measured_count()
    prefix_current_length = measured_count()
    prefix_fallback = models.BooleanField(
        default=False,
        help_text="Prefix figures taken in this process alone: Redis was configured but "
        "unavailable, so the previous turn may have been served elsewhere.",
    )

    stream = models.BooleanField(default=False)
    status_code = models.IntegerField(null=True, blank=True)
    error = models.CharField(max_length=300, blank=True)
    attempts = models.JSONField(default=list, blank=True, help_text="Each upstream try.")
    upstream_latency_ms = models.FloatField(null=True, blank=True)
    prompt_tokens = measured_count()
    completion_tokens = measured_count()
    cached_tokens = measured_count()
    cache_read_tokens = measured_count("Prompt tokens read from the provider's cache.")
    cache_write_tokens = measured_count("Prompt tokens written to the provider's cache.")
    billed_prompt_cost_usd = models.FloatField(
        null=True,
        blank=True,
        help_text="The prompt as billed: uncached, cache-read and cache-written tokens "
        "at the model's prices (NULL when usage was estimated).",
    )
    unpruned_cost_usd = models.FloatField(
        null=True,
        blank=True,
        help_text="Estimated prompt cost of the same request without pinch (an estimate; "
        "equal to the billed cost when pinch sent the request whole).",
    )
    conversation = models.CharField(
        max_length=32, blank=True, help_text="Hash that groups a conversation's requests."
    )
    over_window = models.BooleanField(
        default=False,
        help_text="A pinned model was sent a prompt (plus max_tokens) larger than its context "
        "window, as asked (the X-Router-Window-Exceeded header said so).",
    )
    usage_estimated = models.BooleanField(
        default=False, help_text="Usage is the router's estimate: the upstream reported none."
    )
    # The agent session (routing.sessions): what one session of an agent cost and saved.
    session = models.CharField(
        max_length=200,
        blank=True,
        help_text="The agent's session: Claude Code's or opencode's session id, Codex's "
        "prompt_cache_key, else the conversation.",
    )
    agent = models.CharField(
        max_length=32, blank=True, help_text="The client: claude-code, codex, opencode, or empty."
    )
    session_role = models.CharField(
        max_length=16,
        blank=True,
        choices=SESSION_ROLE_CHOICES,
        help_text="The session's main conversation, a subagent's (Claude Code's Agent tool), "
        "or background work (titles, summaries: no tools).",
    )
    user_turn = models.BooleanField(
        default=False, help_text="The user spoke in this request (not a tool round)."
    )
    omitted_tools = models.JSONField(
        null=True,
        blank=True,
        help_text="Built-in tools left out: the model is not served through the Responses API.",
    )
    route_reason = models.CharField(
        max_length=16,
        blank=True,
        help_text="Why a routed request went where it did: start, held (the task's tool "
        "loop), kept, changed, upgraded, cold, background or per_request.",
    )
    background = models.CharField(
        max_length=16,
        blank=True,
        help_text="Background work recognised (small_model, title, summary, compaction, "
        "short), sent to the cheapest tier; blank for the agent's main loop.",
    )
    baseline_model = models.CharField(
        max_length=200,
        blank=True,
        help_text="The model routing's saving is counted against (routing.baseline_model, "
        "else the dearest the request could have used; a pinned request's own).",
    )
    arm = models.CharField(
        max_length=40,
        default="control",
        help_text="The conversation's arm (routing/experiments.py): control, holdout (pinch "
        "off) or an experiment's name.",
    )
    objects = RouteDecisionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # Recent-decision lists and admin's list, newest first (id breaks ties), and
            # purge_decisions' batches.
            models.Index(fields=["created_at", "id"], name="decision_created_idx"),
            # Admin's decision list filtered by model, or by status, newest first.
            models.Index(fields=["chosen_model", "created_at"], name="decision_model_created_idx"),
            models.Index(fields=["status_code", "created_at"], name="decision_status_created_idx"),
            # A key's spend in its budget period (routing/limits/budgets.py).
            models.Index(fields=["api_key", "created_at"], name="decision_key_created_idx"),
            # A session's decisions: admin's ?session= filter (the session list links to it).
            models.Index(fields=["session", "created_at"], name="decision_session_idx"),
            # A conversation's decisions: admin's ?conversation= filter, rebuilding its
            # totals (routing.conversations.recomputed).
            models.Index(fields=["conversation", "created_at"], name="decision_conversation_idx"),
        ]

    def __str__(self):
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.requested_model} -> {self.chosen_model}"

    @property
    def pinch_tokens_saved(self):
        return tokens_saved(self.pinch_original_tokens, self.pinch_final_tokens)


class AgentSession(RouteDecision):
    """Admin's session list (routing.admin.sessions: figures from the conversations' rows),
    registered here so that it needs the decision log's permission."""

    class Meta:
        proxy = True
        verbose_name = "agent session"
