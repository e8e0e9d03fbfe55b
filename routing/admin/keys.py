"""Admin for router API keys: created through ``create_api_key``, the raw key shown once."""

from django import forms
from django.contrib import admin, messages

from routing.auth import issue_api_key, revoke_api_keys, update_api_key
from routing.models import ApiKey


class ApiKeyAddForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ("name", "is_staff")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "prefix", "is_staff", "active", "created_at", "last_used_at")
    list_filter = ("is_staff", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("name", "prefix")
    actions = ("revoke",)
    # key_hash is never shown: it is not in any of these lists.
    fields = ("name", "is_staff", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("prefix", "created_at", "last_used_at", "revoked_at")

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = ApiKeyAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request, obj=None):
        return ["name", "is_staff"] if obj is None else self.fields

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        if change:
            update_api_key(obj)
            return
        raw = issue_api_key(obj)
        messages.success(
            request,
            f"The new key for “{obj.name}” is {raw} — copy it now: it is shown only this "
            "once and only its hash is stored.",
        )

    @admin.display(boolean=True, description="active")
    def active(self, obj):
        return obj.is_active

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke(self, request, queryset):
        keys = list(queryset.filter(revoked_at__isnull=True))
        count = revoke_api_keys(queryset)
        for key in keys:
            self.log_change(request, key, "Revoked")
        self.message_user(request, f"Revoked {count} API key(s).", messages.SUCCESS)
