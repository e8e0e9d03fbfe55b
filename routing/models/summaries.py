"""The summary tables: one row per hour and dimension set, its figures summed.

By the hour (UTC): the windows the surfaces read start at a reset day's
midnight or 30 days back (rounded down to the hour), and the dashboard charts
the last 48 hours by the hour. Every dimension is NOT NULL (a blank or 0 for
"none") so that one unique constraint names each row and the write is one
``INSERT ... ON CONFLICT DO UPDATE`` adding to it (routing.summaries.writes).
Sizes (bench/bench_scale.py, a million decisions over 31 days): 15
``DecisionSummary`` rows an hour, one ``KeySpend`` row per active key and
model an hour, about 2,000 ``SavedTokens`` buckets a day, one
``ArmHour`` row an hour and arm; and one ``QualityUnit`` per conversation and task.
"""

from django.db import models


def _count(help_text: str = "") -> models.BigIntegerField:
    return models.BigIntegerField(default=0, help_text=help_text)


def _usd(help_text: str = "") -> models.FloatField:
    return models.FloatField(default=0.0, help_text=help_text)


class DecisionSummary(models.Model):
    """The decisions of one hour, by path, model, baseline, status, arm and cache-miss reason."""

    hour = models.DateTimeField()
    path = models.CharField(max_length=16)
    chosen_model = models.CharField(max_length=200)
    baseline_model = models.CharField(max_length=200)
    status_code = models.IntegerField(help_text="0: no status recorded.")
    arm = models.CharField(max_length=40)
    cache_miss_reason = models.CharField(
        max_length=40, help_text="The provider's reason, on rows the cache forecast compares."
    )

    decisions = _count()
    pruned = _count("Decisions pinch sent fewer tokens than it was given.")
    tokens_saved = _count("Tokens pinch removed, over the pruned decisions.")
    pruned_net_usd = _usd("Net saving (unpruned minus billed) over the billed pruned decisions.")
    billed = _count("Decisions with both costs known (the provider reported usage).")
    net_usd = _usd("Net saving over the billed decisions.")
    billed_prompt_tokens = _count("Prompt tokens of the billed decisions.")
    billed_removed_tokens = _count("Tokens pinch removed from the billed decisions.")
    billed_completion_tokens = _count("Completion tokens of the billed decisions.")
    billed_prompt_usd = _usd("The prompt as billed, over the billed decisions.")
    unpruned_usd = _usd("The prompt unpruned, with the cache, over the billed decisions.")
    # The same three of the billed decisions whose bill had no cache read or written: their
    # unpruned estimate is every token at the full price, so no cache is credited for them.
    uncached_prompt_tokens = _count("Prompt tokens of the billed decisions without a cache.")
    uncached_removed_tokens = _count("Tokens pinch removed from those.")
    uncached_unpruned_usd = _usd("Their prompt unpruned (at the full price).")
    relevance_fallbacks = _count()
    latency_count = _count("Decisions with an upstream latency.")
    latency_sum_ms = _usd()
    # Cumulative, like Prometheus's buckets: latency at or under each of
    # routing.summaries.contributions.LATENCY_BUCKETS_SECONDS, in order.
    latency_le_0 = _count()
    latency_le_1 = _count()
    latency_le_2 = _count()
    latency_le_3 = _count()
    latency_le_4 = _count()
    latency_le_5 = _count()
    latency_le_6 = _count()
    latency_le_7 = _count()
    latency_le_8 = _count()
    latency_le_9 = _count()
    forecast_compared = _count("Decisions the cache forecast compares with the bill.")
    predicted_read = _count()
    predicted_total = _count()
    billed_read = _count()
    billed_total = _count()
    cache_misses = _count()
    cache_hits = _count()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "hour",
                    "path",
                    "chosen_model",
                    "baseline_model",
                    "status_code",
                    "arm",
                    "cache_miss_reason",
                ],
                name="decision_summary_uniq",
            )
        ]
        # The unique constraint's index (hour first) serves every window read.

    def __str__(self):
        return f"{self.hour:%Y-%m-%d %H:00} {self.path} {self.chosen_model}: {self.decisions}"


class KeySpend(models.Model):
    """What one key spent in one hour, by chosen model: the budget check reads these."""

    hour = models.DateTimeField()
    api_key_id = models.IntegerField(help_text="The key's id; 0 for requests without a key.")
    chosen_model = models.CharField(max_length=200)
    decisions = _count()
    prompt_usd = _usd("The prompt as billed, else as estimated.")
    completion_tokens = _count()

    class Meta:
        constraints = [
            # Also the index a budget check reads: one key's hours from its period's start.
            models.UniqueConstraint(
                fields=["api_key_id", "hour", "chosen_model"], name="key_spend_uniq"
            )
        ]

    def __str__(self):
        return f"{self.hour:%Y-%m-%d %H:00} key {self.api_key_id} {self.chosen_model}"


class SavedTokens(models.Model):
    """Pruned decisions of one day by tokens saved (each rounded down at most 1 %): the median's
    histogram.

    By the day, not the hour: a day fills up to a thousand or so buckets, so an
    hour's grain would make this the largest table; the median reads whole days.
    """

    day = models.DateTimeField(help_text="The day's first instant (UTC).")
    bucket = models.IntegerField(
        help_text="Tokens saved, rounded down at most 1 % to a round number."
    )
    decisions = _count()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["day", "bucket"], name="saved_tokens_uniq")]

    def __str__(self):
        return f"{self.day:%Y-%m-%d} bucket {self.bucket}: {self.decisions}"


class CompressedTools(models.Model):
    """Tool results pinch compressed in one hour, by tool name."""

    hour = models.DateTimeField()
    tool = models.CharField(max_length=200)
    results = _count()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["hour", "tool"], name="compressed_tools_uniq")
        ]

    def __str__(self):
        return f"{self.hour:%Y-%m-%d %H:00} {self.tool}: {self.results}"


class ArmHour(models.Model):
    """One arm's hour, for the quality block and the conversations pinch made cheaper or
    dearer: two kinds of figures under one key.

    - What the arm's decisions of the hour add (each decision in its own hour): the
      quality signals' counts.
    - The conversations, and the tasks of them, whose latest decision falls in the hour,
      each counted once with the figures of its whole life (``QualityUnit``): a unit moves
      to a later hour as its conversation goes on. Their samples are kept as moments (how
      many, sum, sum of squares: metrics/intervals.py), so a mean and its interval over a
      window read its hours' rows, a few a day and arm, whatever the traffic.
    """

    hour = models.DateTimeField()
    arm = models.CharField(max_length=40)

    repeats_compressed = _count()
    repeats_whole = _count()
    seen_compressed = _count()
    seen_whole = _count()
    results_after_prune = _count("Tool results answering a message sent after a prune.")
    errors_after_prune = _count()
    results = _count()
    errors = _count()
    # Recall as a quality signal (metrics/recall_quality.py): the recalls per pruned request
    # and per conversation pinch pruned, beside the holdout's repeats.
    pruned = _count("Answered decisions pinch sent fewer tokens than it was given.")
    recalls = _count("Calls of the router's recall tool it answered itself.")
    recalled_tokens = _count("Tokens of the originals those recalls gave back.")

    conversations = _count("Conversations whose latest decision is in the hour.")
    billed_conversations = _count("Of those, with a billed prompt.")
    cost_usd = _usd("Their cost (billed prompt plus completion), summed.")
    cost_squares = _usd("The squares of their costs, summed.")
    cheaper = _count("Conversations whose net saving rounds to a positive micro-dollar.")
    dearer = _count("Conversations whose net saving rounds to a negative micro-dollar.")
    surprised = _count("Conversations the cache forecast's bill surprised at least once.")
    asked_tools = _count("Conversations whose latest answer asked for tool calls.")
    pruned_conversations = _count("Conversations with an answered decision pinch pruned.")
    tasks = _count("Tasks whose latest decision is in the hour.")
    task_turns = _count()
    task_turn_squares = _count()
    task_tokens = _count("Prompt tokens, as reported, else as measured.")
    task_token_squares = _usd("Squares of token counts, as floats: they overflow 64 bits.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["hour", "arm"], name="arm_hour_uniq")]

    def __str__(self):
        return f"{self.hour:%Y-%m-%d %H:00} {self.arm}"


class QualityUnit(models.Model):
    """A conversation (task -1) or one task of it: its running figures, and where its
    latest decision placed it in ``ArmHour`` (routing/summaries/units.py). One or a few rows
    a conversation, read by key on the write path; a whole table's read only to rebuild.
    """

    conversation = models.CharField(max_length=32)
    task = models.IntegerField(help_text="The quality task; -1: the whole conversation.")
    arm = models.CharField(max_length=40, help_text="Its latest decision's (blank keeps).")
    last_at = models.DateTimeField(help_text="Its latest decision.")
    last_answer_tool_calls = models.BooleanField(null=True)
    decisions = _count()
    billed_decisions = _count("Decisions with a billed prompt cost.")
    billed_usd = _usd("The prompt as billed, over those.")
    completion_usd = _usd("Completion tokens at their model's price when recorded.")
    net_usd = _usd("Net saving over the billed decisions (both costs known).")
    net_decisions = _count("Billed decisions (both costs known).")
    surprises = _count("Decisions whose bill surprised the cache forecast.")
    prompt_tokens = _count("Prompt tokens as reported, else as measured.")
    pruned = _count("Answered decisions pinch sent fewer tokens than it was given.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "task"], name="quality_unit_uniq")
        ]
        indexes = [
            # The conversations stopped mid loop in the window's last, partial hour.
            models.Index(fields=["last_at"], name="quality_unit_last_idx"),
        ]

    def __str__(self):
        return f"{self.conversation} task {self.task}: {self.decisions}"
