"""Admin for the decision log: read-only, filterable by what pinch did."""

from django.contrib import admin

from routing.models import RouteDecision


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
class RouteDecisionAdmin(admin.ModelAdmin):
    """Rows are written by the dispatcher only: the admin can look, not touch."""

    list_display = (
        "created_at",
        "path",
        "requested_model",
        "chosen_model",
        "tier",
        "status_code",
        "stream",
        "pinch_original_tokens",
        "pinch_final_tokens",
        "tokens_saved",
        "relevance_used",
        "upstream_latency_ms",
        "api_key",
    )
    list_filter = ("path", "chosen_model", "tier", "status_code", PrunedFilter, "relevance_used")
    list_select_related = ("api_key",)
    date_hierarchy = "created_at"
    search_fields = ("requested_model", "chosen_model", "upstream_model")
    fieldsets = (
        (
            "Request",
            {
                "fields": [
                    "created_at",
                    "path",
                    "api_key",
                    "requested_model",
                    "chosen_model",
                    "provider",
                    "upstream_model",
                    "tier",
                    "classifier",
                    "measured_tokens",
                    "estimated_cost_usd",
                    "stream",
                ]
            },
        ),
        (
            "Pinch",
            {
                "fields": [
                    "pinch_original_tokens",
                    "pinch_final_tokens",
                    "tokens_saved",
                    "pinch_summarized",
                    "pinch_tools",
                    "relevance_used",
                    "relevance_fallback",
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
                    "attempts",
                    "upstream_latency_ms",
                    "prompt_tokens",
                    "completion_tokens",
                    "cached_tokens",
                    "usage_estimated",
                ]
            },
        ),
    )

    def get_queryset(self, request):
        # Annotated so the "tokens saved" column sorts in the database.
        return super().get_queryset(request).with_tokens_saved()

    def get_readonly_fields(self, request, obj=None):
        return [name for _, options in self.fieldsets for name in options["fields"]]

    @admin.display(description="tokens saved", ordering="tokens_saved")
    def tokens_saved(self, obj):
        return obj.pinch_tokens_saved

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
