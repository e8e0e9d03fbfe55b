"""Admin for router API keys: created through ``create_api_key``, the raw key shown once.

A key's budgets and rate limits are on its page too, saved through
``routing.limits.settings.set_key_limits`` (checked, one admin log entry with
each field's before and after); changing them needs the
``routing.change_key_limits`` permission (superusers hold it), as the config
overrides need theirs: staff who may rename a key may not lift its budget.
"""

from django import forms
from django.contrib import admin, messages

from routing.auth import issue_api_key, revoke_api_keys, update_api_key
from routing.config.store import current_config
from routing.limits.budgets import has_budget, spend_by_key
from routing.limits.settings import LIMIT_FIELDS, LimitsError, check_limits, set_key_limits
from routing.models import ApiKey

LIMITS_PERMISSION = "routing.change_key_limits"


class ApiKeyAddForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ("name", "is_staff")


class ApiKeyChangeForm(forms.ModelForm):
    """Limits checked as the service checks them: the error names the field, nothing is saved."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "budget_period" in self.fields:
            self.fields["budget_period"].required = False  # left out: it stays as it is

    def clean(self):
        cleaned = super().clean()
        if not cleaned.get("budget_period"):
            cleaned.pop("budget_period", None)
        given = {name: cleaned[name] for name in LIMIT_FIELDS if name in cleaned}
        if given:
            stored = ApiKey.objects.get(pk=self.instance.pk)
            try:
                check_limits({name: getattr(stored, name) for name in LIMIT_FIELDS}, given)
            except LimitsError as error:
                raise forms.ValidationError(str(error)) from None
        return cleaned


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "prefix", "is_staff", "active", "limits", "created_at", "last_used_at")
    list_filter = ("is_staff", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("name", "prefix")
    actions = ("revoke",)
    form = ApiKeyChangeForm
    # key_hash is never shown: it is not in any of these lists.
    fieldsets = (
        (
            None,
            {"fields": ("name", "is_staff", "prefix", "created_at", "last_used_at", "revoked_at")},
        ),
        ("Budget and rate limits", {"fields": ("spend", *LIMIT_FIELDS)}),
    )
    readonly_fields = ("prefix", "created_at", "last_used_at", "revoked_at", "spend")

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = ApiKeyAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request, obj=None):
        return [(None, {"fields": ("name", "is_staff")})] if obj is None else self.fieldsets

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        if request.user.has_perm(LIMITS_PERMISSION):
            return self.readonly_fields
        return (*self.readonly_fields, *LIMIT_FIELDS)

    def save_model(self, request, obj, form, change):
        if change:
            update_api_key(obj)
            wanted = {
                name: form.cleaned_data[name] for name in LIMIT_FIELDS if name in form.cleaned_data
            }
            if wanted:
                set_key_limits(ApiKey.objects.get(pk=obj.pk), wanted, actor=request.user)
            return
        raw = issue_api_key(obj)
        messages.success(
            request,
            f"The new key for “{obj.name}” is {raw} — copy it now: it is shown only this "
            "once and only its hash is stored.",
        )

    def construct_change_message(self, request, form, formsets, add=False):
        # The limits have their own entry, with before and after (set_key_limits).
        changed = [name for name in form.changed_data if name not in LIMIT_FIELDS]
        return [{"changed": {"fields": changed}}] if changed else ""

    def log_change(self, request, obj, message):
        if message:  # an edit of the limits alone is logged by set_key_limits
            return super().log_change(request, obj, message)
        return None

    @admin.display(boolean=True, description="active")
    def active(self, obj):
        return obj.is_active

    @admin.display(description="limits")
    def limits(self, obj):
        parts = [
            f"{obj.rpm_limit} rpm" if obj.rpm_limit else "",
            f"{obj.tpm_limit:,} tpm" if obj.tpm_limit else "",
            f"${obj.budget_usd:g}/{obj.budget_period}" if obj.budget_usd is not None else "",
        ]
        return " · ".join(p for p in parts if p) or "—"

    @admin.display(description="spent this period")
    def spend(self, obj):
        if obj.pk is None or not has_budget(obj):
            return "no budget"
        state = spend_by_key([obj], current_config())[obj.pk]
        return (
            f"${state.spent_usd:.2f} this {state.period}, resets {state.resets_at:%Y-%m-%d %H:%M}"
        )

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke(self, request, queryset):
        keys = list(queryset.filter(revoked_at__isnull=True))
        count = revoke_api_keys(queryset)
        for key in keys:
            self.log_change(request, key, "Revoked")
        self.message_user(request, f"Revoked {count} API key(s).", messages.SUCCESS)
