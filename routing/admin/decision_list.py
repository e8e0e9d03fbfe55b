"""What keeps admin's decision list fast on millions of rows: no count or scan of the whole log.

Django admin, left to itself, counts the whole table for "N total" and again
for the paginator, lists a filter's choices with ``SELECT DISTINCT`` over the
whole table, and builds its date hierarchy from the distinct dates of every
row: each a scan of the log, seconds at 3 million rows. Here the paginator
counts at most ``COUNT_CAP`` rows (the list reads "10,000+" pages of results
past it), the choices of a filter come from the summary tables (a few hundred
rows) or the config, and the day filter lists the days the summaries hold.
Every filter narrows an index (routing.models: created_at, and chosen_model or
status_code with created_at), and the list is read newest first on
``decision_created_idx``.
"""

from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models.functions import TruncDate
from django.utils.functional import cached_property

from routing.config.store import current_config
from routing.models import DecisionSummary

COUNT_CAP = 10_000  # rows counted at most: 100 pages of 100, more than anyone pages through


class CappedPaginator(Paginator):
    """A paginator that counts up to COUNT_CAP rows: past it, the last page is the cap's."""

    @cached_property
    def count(self):
        return self.object_list[:COUNT_CAP].count()


class _SummaryValuesFilter(admin.SimpleListFilter):
    """Choices from the summary tables' distinct values, not from the log's."""

    field = ""

    def lookups(self, request, model_admin):
        values = DecisionSummary.objects.values_list(self.field, flat=True).distinct()
        return [(str(value), self.label(value)) for value in sorted(values)]

    def label(self, value) -> str:
        return str(value) or "(none)"

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return queryset.filter(**{self.field: self.value()})


class ModelFilter(_SummaryValuesFilter):
    title = "chosen model"
    parameter_name = field = "chosen_model"


class StatusFilter(_SummaryValuesFilter):
    title = "status code"
    parameter_name = field = "status_code"

    def lookups(self, request, model_admin):
        # 0 in the summaries is a row without a status (NULL in the log): not a filter choice.
        return [(value, label) for value, label in super().lookups(request, model_admin) if label]

    def label(self, value) -> str:
        return str(value) if value else ""


class TierFilter(admin.SimpleListFilter):
    title = "tier"
    parameter_name = "tier"

    def lookups(self, request, model_admin):
        tiers = sorted({model.tier for model in current_config().models})
        return [(tier, tier) for tier in tiers]

    def queryset(self, request, queryset):
        return queryset if self.value() is None else queryset.filter(tier=self.value())


class DayFilter(admin.SimpleListFilter):
    """One day's decisions (UTC), among the days the summaries hold."""

    title = "day (UTC)"
    parameter_name = "day"

    def lookups(self, request, model_admin):
        days = (
            DecisionSummary.objects.annotate(day=TruncDate("hour"))
            .values_list("day", flat=True)
            .distinct()
            .order_by("-day")
        )
        return [(day.isoformat(), day.isoformat()) for day in days]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return queryset.filter(created_at__date=self.value())
