"""Admin for the decision log: read-only, filterable by what pinch did, fast on millions of
rows (routing/admin/decision_list.py).

The list shows what an operator looks for first (time, model, status, tokens
in -> out, saved, cost, latency), formatted by ``routing.formatting`` like the
dashboard and the TUI; everything else is on the decision's page.
"""

from django.contrib import admin
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from routing.admin.decision_list import (
    CappedPaginator,
    DayFilter,
    ModelFilter,
    StatusFilter,
    TierFilter,
)
from routing.admin.read_only import ReadOnlyAdmin
from routing.formatting import (
    format_cost,
    format_count_or_missing,
    format_latency,
    format_tokens_in_out,
)
from routing.models import RouteDecision
from routing.request_ids import decision_id_in, decision_request_id


def _count(field: str, label: str):
    """A read-only token count with thousands separators (the detail page's integers)."""

    @admin.display(description=label, ordering=field)
    def show(self, obj):
        return format_count_or_missing(getattr(obj, field))

    return show


def _yes_no(field: str, label: str):
    """A flag as a word: admin's red ✖ icon for "not streamed" reads as a failure."""

    @admin.display(description=label, ordering=field)
    def show(self, obj):
        return "yes" if getattr(obj, field) else "no"

    return show


class PrunedFilter(admin.SimpleListFilter):
    title = "pinch"
    parameter_name = "pruned"

    def lookups(self, request, model_admin):
        return [("yes", "pruned"), ("no", "not pruned"), ("off", "pinch off")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.pruned()
        if self.value() == "no":
            return queryset.not_pruned()
        if self.value() == "off":
            return queryset.pinch_off()
        return queryset


@admin.register(RouteDecision)
class RouteDecisionAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    """Rows are written by the dispatcher only: the admin can look, not touch."""

    list_display = (
        "time",
        "routed_to",
        "status",
        "tokens_in_out",
        "tokens_saved",
        "cost",
        "latency",
        "key",
    )
    list_display_links = ("time",)
    list_filter = (
        "path",
        ModelFilter,
        TierFilter,
        StatusFilter,
        PrunedFilter,
        "relevance_used",
        DayFilter,
    )
    list_select_related = ("api_key",)
    # No count of the whole log (routing/admin/decision_list.py).
    show_full_result_count = False
    paginator = CappedPaginator
    ordering = ("-created_at",)
    search_fields = ("requested_model", "chosen_model", "upstream_model")
    search_help_text = "A model id, or a request id as the client saw it (X-Request-Id)."
    fieldsets = (
        (
            "Request",
            {
                "fields": [
                    "time",
                    "request_id",
                    "path",
                    "api_key",
                    "requested_model",
                    "chosen_model",
                    "provider",
                    "upstream_model",
                    "tier",
                    "classifier",
                    "measured",
                    "over_the_window",
                    "cost",
                    "streamed",
                ]
            },
        ),
        (
            "Pinch",
            {
                "fields": [
                    "pinch_original",
                    "pinch_final",
                    "tokens_saved",
                    "pinch_summarized",
                    "tools_compressed",
                    "relevance",
                    "relevance_failed",
                ]
            },
        ),
        (
            "Prefix probe (measurement only)",
            {"fields": ["prefix_match", "prefix_previous_length", "prefix_current_length"]},
        ),
        (
            "Upstream",
            {
                "fields": [
                    "status_code",
                    "error",
                    "tries",
                    "latency",
                    "prompt",
                    "completion",
                    "cached",
                    "usage_is_estimate",
                ]
            },
        ),
    )

    def get_search_results(self, request, queryset, search_term):
        # A quoted X-Request-Id (``20261201T183232Z-decision-129``) finds its row.
        decision_id = decision_id_in(search_term)
        if decision_id is not None:
            return queryset.filter(pk=decision_id), False
        return super().get_search_results(request, queryset, search_term)

    def get_queryset(self, request):
        # Annotated so the "tokens saved" column sorts in the database.
        return super().get_queryset(request).with_tokens_saved()

    def get_readonly_fields(self, request, obj=None):
        return [name for _, options in self.fieldsets for name in options["fields"]]

    measured = _count("measured_tokens", "measured tokens")
    pinch_original = _count("pinch_original_tokens", "pinch original tokens")
    pinch_final = _count("pinch_final_tokens", "pinch final tokens")
    prompt = _count("prompt_tokens", "prompt tokens")
    completion = _count("completion_tokens", "completion tokens")
    cached = _count("cached_tokens", "cached tokens")
    streamed = _yes_no("stream", "streamed")
    over_the_window = _yes_no("over_window", "sent over the model's context window")
    relevance = _yes_no("relevance_used", "relevance ordering used")
    relevance_failed = _yes_no("relevance_fallback", "relevance failed (uniform pruning)")
    usage_is_estimate = _yes_no("usage_estimated", "usage estimated by the router")

    @admin.display(description="tokens saved", ordering="tokens_saved")
    def tokens_saved(self, obj):
        saved = obj.pinch_tokens_saved
        return "pinch off" if saved is None else format_count_or_missing(saved)

    @admin.display(description="time (UTC)", ordering="created_at")
    def time(self, obj):
        # One format on the list and the page (admin's own reads "Dec. 1, 2026, 6:32 p.m.").
        return timezone.localtime(obj.created_at).strftime("%Y-%m-%d %H:%M:%S")

    @admin.display(description="request id (X-Request-Id)")
    def request_id(self, obj):
        return decision_request_id(obj.pk, obj.created_at)

    @admin.display(description="tool results compressed")
    def tools_compressed(self, obj):
        """``bash: 3, read_file: 2``, most first: pinch_tools is {tool name: count}."""
        tools = obj.pinch_tools if isinstance(obj.pinch_tools, dict) else {}
        ranked = sorted(tools.items(), key=lambda item: (-item[1], item[0]))
        return ", ".join(f"{name}: {count:,}" for name, count in ranked) or "—"

    @admin.display(description="upstream tries")
    def tries(self, obj):
        """One line per try: model, result, status, time, and why it failed."""
        attempts = obj.attempts if isinstance(obj.attempts, list) else []
        if not attempts:
            return "—"
        lines = []
        for attempt in attempts:
            status = attempt.get("status")
            words = [str(attempt.get("model", "?")), str(attempt.get("result", "?"))]
            if status:
                words.append(f"HTTP {status}")
            words.append(format_latency(attempt.get("ms")))
            reason = attempt.get("reason")
            lines.append(" · ".join(words) + (f" — {reason}" if reason else ""))
        return format_html_join(mark_safe("<br>"), "{}", ((line,) for line in lines))

    @admin.display(description="model", ordering="chosen_model")
    def routed_to(self, obj):
        if not obj.chosen_model:
            return f"{obj.requested_model} → no model ran"
        if obj.requested_model == obj.chosen_model:
            return obj.chosen_model
        return f"{obj.requested_model} → {obj.chosen_model}"

    @admin.display(description="status", ordering="status_code")
    def status(self, obj):
        if obj.status_code is None:
            return "—"
        if obj.status_code >= 400:
            return format_html('<span class="failed">{}</span>', obj.status_code)
        return obj.status_code

    @admin.display(description="tokens in → out", ordering="prompt_tokens")
    def tokens_in_out(self, obj):
        return format_tokens_in_out(obj.prompt_tokens, obj.completion_tokens, obj.usage_estimated)

    @admin.display(description="est. prompt cost", ordering="estimated_cost_usd")
    def cost(self, obj):
        return format_cost(obj.estimated_cost_usd)

    @admin.display(description="key", ordering="api_key__name")
    def key(self, obj):
        return "—" if obj.api_key is None else obj.api_key.name

    @admin.display(description="latency", ordering="upstream_latency_ms")
    def latency(self, obj):
        return format_latency(obj.upstream_latency_ms)
