"""What the router stores: its decisions, its conversations (routing/conversation_model.py),
its API keys (with their limits and refusal counts) and the admin's config overrides.

Provider keys are never stored; router keys only as a SHA-256 hash (they are
long random tokens, so a fast hash is enough to make a leaked table useless).
"""

import hashlib
import secrets

from django.db import models
from django.db.models import ExpressionWrapper, F, Q
from django.utils import timezone

from routing.columns import measured_count
from routing.conversation_model import Conversation  # noqa: F401  (a model of this app)
from routing.forecast_columns import CacheForecastColumns
from routing.quality_columns import QualityColumns
from routing.summary_tables import *  # noqa: F403  (the summary tables are this app's models too)

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


class ConfigOverride(models.Model):
    """One config value set in admin, by dotted key (e.g. ``pinch.enabled``)."""

    key = models.CharField(max_length=200, unique=True)
    # null=True: some keys are legitimately set to null (protected_max_chars: null).
    value = models.JSONField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]
        # Staff is not enough: the controls page and every override need this
        # permission (superusers hold every permission).
        permissions = [("change_router_config", "Can change the router's knobs and overrides")]

    def __str__(self):
        return f"{self.key} = {self.value!r}"


class RegisteredModel(models.Model):
    """A model added or redefined in admin; replaces a file model of the same id."""

    model_id = models.CharField("id", max_length=200, unique=True)
    provider = models.CharField(max_length=100)
    upstream_model = models.CharField(max_length=200, blank=True)
    tier = models.CharField(max_length=50)
    context_window = models.PositiveIntegerField()
    prompt_price = models.FloatField(default=0.0, help_text="USD per 1M prompt tokens.")
    cached_prompt_price = models.FloatField(
        null=True, blank=True, help_text="USD per 1M cached prompt tokens; empty = prompt price."
    )
    completion_price = models.FloatField(default=0.0, help_text="USD per 1M completion tokens.")
    supports_tools = models.BooleanField(default=True)
    supports_vision = models.BooleanField(default=False)
    supports_json_mode = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["model_id"]

    def __str__(self):
        return self.model_id

    def as_config(self) -> dict:
        capabilities = [
            name
            for name, flag in (
                ("tools", self.supports_tools),
                ("vision", self.supports_vision),
                ("json_mode", self.supports_json_mode),
            )
            if flag
        ]
        return {
            "id": self.model_id,
            "provider": self.provider,
            "upstream_model": self.upstream_model or None,
            "tier": self.tier,
            "context_window": self.context_window,
            "prompt_price": self.prompt_price,
            "cached_prompt_price": self.cached_prompt_price,
            "completion_price": self.completion_price,
            "capabilities": capabilities,
        }


class StoredResponse(models.Model):
    """A Responses API answer kept for ``previous_response_id`` and ``GET /v1/responses/{id}``.

    ``response_id`` is the router's own (``resp_`` + uuid4), never an
    upstream's. ``input_items`` holds only this request's input: the rest of
    the conversation is the chain of ``previous_response_id`` rows, all
    sharing ``chain_root`` (read in one query), each item stored once.
    ``chain_bytes`` is the whole conversation's size, bounded by
    ``responses.max_chain_bytes``. Rows from before the chain held their
    whole conversation and have no previous row.
    """

    response_id = models.CharField(max_length=100, unique=True)
    previous_response_id = models.CharField(max_length=100, blank=True, default="")
    chain_root = models.CharField(max_length=100, blank=True, default="")
    chain_bytes = models.BigIntegerField(default=0)
    api_key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.CASCADE, related_name="responses"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    input_items = models.JSONField(default=list)
    response = models.JSONField(help_text="The response object, output items included.")

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # Deleting the expired rows when a new one is kept.
            models.Index(fields=["expires_at"], name="stored_response_expiry_idx"),
            # A conversation's rows, read at once to continue it.
            models.Index(fields=["api_key", "chain_root"], name="stored_response_chain_idx"),
        ]

    def __str__(self):
        return self.response_id


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
