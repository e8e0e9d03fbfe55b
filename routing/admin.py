"""Django admin for the router: the decision log, the model registry, API keys and controls.

Every change of router state goes through a named service in routing.runtime or
routing.auth (``set_overrides``, ``check_overrides``, ``create_api_key``,
``revoke_api_keys``); this module only validates forms and calls them.

The controls page (/admin/controls/) is added to the DEFAULT admin site by
wrapping ``admin.site.get_urls``: a custom AdminSite would need the project's
INSTALLED_APPS changed to swap ``django.contrib.admin`` for an AdminConfig, for
one extra URL. ``admin.site.admin_view`` gives it the same staff check, login
redirect and CSRF/no-cache handling as every other admin page.
"""

import json
import re
from functools import reduce

import yaml
from django import forms
from django.contrib import admin, messages
from django.db.models import F, Q
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from routing.auth import create_api_key, revoke_api_keys
from routing.config import ConfigError, apply_overrides
from routing.models import ApiKey, RegisteredModel, RouteDecision
from routing.runtime import (
    check_overrides,
    config_source,
    current_config,
    set_overrides,
    stored_overrides,
)

# ---------------------------------------------------------------------------
# Route decisions: a read-only log.


class PrunedFilter(admin.SimpleListFilter):
    title = "pinch"
    parameter_name = "pruned"

    def lookups(self, request, model_admin):
        return [("yes", "pruned"), ("no", "not pruned"), ("off", "pinch off")]

    def queryset(self, request, queryset):
        measured = Q(pinch_original_tokens__isnull=False, pinch_final_tokens__isnull=False)
        if self.value() == "yes":
            return queryset.filter(pinch_original_tokens__gt=F("pinch_final_tokens"))
        if self.value() == "no":
            return queryset.filter(measured, pinch_original_tokens__lte=F("pinch_final_tokens"))
        if self.value() == "off":
            return queryset.exclude(measured)
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
        return (
            super()
            .get_queryset(request)
            .annotate(saved=F("pinch_original_tokens") - F("pinch_final_tokens"))
        )

    def get_readonly_fields(self, request, obj=None):
        return [name for _, options in self.fieldsets for name in options["fields"]]

    @admin.display(description="tokens saved", ordering="saved")
    def tokens_saved(self, obj):
        return obj.pinch_tokens_saved

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


# ---------------------------------------------------------------------------
# Model registry: a row is validated by building the effective config with it.

# pydantic's field names (as the ConfigError message spells them) -> form fields
_MODEL_FIELD_FOR = {
    "id": "model_id",
    "provider": "provider",
    "upstream_model": "upstream_model",
    "tier": "tier",
    "context_window": "context_window",
    "prompt_price": "prompt_price",
    "cached_prompt_price": "cached_prompt_price",
    "completion_price": "completion_price",
}


class RegisteredModelForm(forms.ModelForm):
    class Meta:
        model = RegisteredModel
        fields = (
            "model_id",
            "provider",
            "upstream_model",
            "tier",
            "context_window",
            "prompt_price",
            "cached_prompt_price",
            "completion_price",
            "supports_tools",
            "supports_vision",
            "supports_json_mode",
        )

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        candidate = RegisteredModel(
            **{name: cleaned.get(name) for name in self.Meta.fields}
        ).as_config()
        others = RegisteredModel.objects.all()
        if self.instance.pk is not None:
            others = others.exclude(pk=self.instance.pk)
        models = [m.as_config() for m in others] + [candidate]
        overrides = stored_overrides()
        try:
            check_overrides(overrides, models=models)
        except ConfigError as error:
            self._attach_config_error(str(error), overrides, models, candidate["id"])
        return cleaned

    def _attach_config_error(self, message, overrides, models, model_id):
        """Put each part of the message on the field it names when it is about this row."""
        merged = apply_overrides(config_source().data(), overrides, models).get("models") or []
        index = next((i for i, m in enumerate(merged) if m.get("id") == model_id), None)
        for part in message.split("; "):
            # Cross-reference checks run on the whole config, so pydantic reports them at
            # the top level; the message itself still names models.<i>.<field>.
            part = part.removeprefix("(top level): ")
            match = re.search(r"\bmodels\.(\d+)\.(\w+)", part)
            field = None
            if match and index is not None and int(match.group(1)) == index:
                field = _MODEL_FIELD_FOR.get(match.group(2))
            self.add_error(field, part)


@admin.register(RegisteredModel)
class RegisteredModelAdmin(admin.ModelAdmin):
    form = RegisteredModelForm
    list_display = (
        "model_id",
        "provider",
        "tier",
        "context_window",
        "prompt_price",
        "cached_prompt_price",
        "completion_price",
        "supports_tools",
        "supports_vision",
        "supports_json_mode",
        "updated_at",
    )
    list_filter = ("provider", "tier")
    search_fields = ("model_id", "upstream_model")


# ---------------------------------------------------------------------------
# API keys: created through create_api_key, the raw key shown once.


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
            super().save_model(request, obj, form, change)
            return
        key, raw = create_api_key(obj.name, is_staff=obj.is_staff)
        # The admin's add view goes on with ``obj`` (log entry, redirect): make it the saved row.
        obj.pk = key.pk
        obj.prefix = key.prefix
        obj.key_hash = key.key_hash
        obj.created_at = key.created_at
        obj._state.adding = False
        obj._state.db = key._state.db
        messages.success(
            request,
            f"The new key for “{key.name}” is {raw} — copy it now: it is shown only this "
            "once and only its hash is stored.",
        )

    @admin.display(boolean=True, description="active")
    def active(self, obj):
        return obj.is_active

    @admin.action(description="Revoke selected API keys")
    def revoke(self, request, queryset):
        count = revoke_api_keys(queryset)
        self.message_user(request, f"Revoked {count} API key(s).", messages.SUCCESS)


# ---------------------------------------------------------------------------
# Controls: the runtime knobs and the persisted config overrides.


class Knob:
    def __init__(self, name, key, label, help_text, measurement_only=False):
        self.name = name  # the snapshot's knob name
        self.key = key  # the dotted config key it persists as
        self.label = label
        self.help_text = help_text
        self.measurement_only = measurement_only

    def value(self, config):
        return reduce(getattr, self.key.split("."), config)


KNOBS = [
    Knob(
        "pinch_enabled",
        "pinch.enabled",
        "Pinch enabled",
        "Prune old tool results before any paid token is sent. Off: the payload is the "
        "caller's messages, byte for byte.",
    ),
    Knob(
        "pinch_relevance_enabled",
        "pinch.relevance.enabled",
        "Relevance ordering",
        "Compress the least relevant tool results first and stop once under budget. Off: "
        "uniform pruning. Needs pinch enabled.",
    ),
    Knob(
        "pinch_prefix_probe",
        "pinch.prefix_probe",
        "Prefix probe",
        "Record how much of the previous turn's payload prefix this turn kept (three integers "
        "per decision).",
        measurement_only=True,
    ),
]
KNOB_KEYS = {knob.key for knob in KNOBS}
MEASUREMENT_ONLY_KEYS = {knob.key for knob in KNOBS if knob.measurement_only}
MEASUREMENT_ONLY_NOTE = "Measurement only: routing and the payload sent are unchanged."

_DOTTED_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$")


class KnobsForm(forms.Form):
    def __init__(self, *args, config=None, **kwargs):
        super().__init__(*args, **kwargs)
        for knob in KNOBS:
            self.fields[knob.name] = forms.BooleanField(
                required=False,
                label=knob.label,
                help_text=knob.help_text,
                initial=knob.value(config) if config is not None else None,
            )

    def changes(self, config) -> dict:
        """The knobs whose submitted value differs from the effective config."""
        return {
            knob.key: self.cleaned_data[knob.name]
            for knob in KNOBS
            if self.cleaned_data[knob.name] != knob.value(config)
        }


def overrides_as_text(overrides: dict) -> str:
    # JSON is a subset of YAML flow style: one unambiguous line per value.
    return "\n".join(f"{key}: {json.dumps(value)}" for key, value in sorted(overrides.items()))


def parse_override_lines(text: str) -> dict:
    """``dotted.key: YAML value`` lines -> {key: value}; raises ValidationError naming the line."""
    result = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, colon, raw_value = stripped.partition(":")
        key = key.strip()
        if not colon or not _DOTTED_KEY.match(key):
            raise forms.ValidationError(
                f"line {number}: expected 'dotted.key: value', got {stripped!r}"
            )
        if key in result:
            raise forms.ValidationError(f"line {number}: {key} is set twice")
        try:
            result[key] = yaml.safe_load(raw_value) if raw_value.strip() else None
        except yaml.YAMLError as error:
            problem = getattr(error, "problem", None) or "not valid YAML"
            raise forms.ValidationError(f"line {number}: {key}: {problem}") from None
    return result


class OverridesForm(forms.Form):
    overrides = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 10, "cols": 80, "spellcheck": "false"}),
        help_text="One override a line: dotted.key: YAML value (e.g. pinch.budget_tokens: 40000). "
        "Remove a line to remove the override.",
    )

    def clean_overrides(self):
        return parse_override_lines(self.cleaned_data["overrides"])


def _apply(form, changes, removals, request, what):
    """Save through set_overrides; a ConfigError becomes the form's error and nothing is saved."""
    try:
        set_overrides(changes, removals)
    except ConfigError as error:
        form.add_error(None, str(error))
        return False
    if changes or removals:
        names = ", ".join(sorted([*changes, *removals]))
        messages.success(request, f"{what} saved ({names}). They apply from the next request.")
    else:
        messages.info(request, "Nothing changed.")
    return True


def controls_view(request):
    config_error = None
    try:
        config = current_config()
    except ConfigError as error:
        config, config_error = None, str(error)
    stored = stored_overrides()
    knobs_form = KnobsForm(config=config)
    overrides_form = OverridesForm(initial={"overrides": overrides_as_text(stored)})

    if request.method == "POST":
        if request.POST.get("panel") == "knobs":
            knobs_form = KnobsForm(request.POST, config=config)
            if config is None:
                knobs_form.add_error(None, "Fix the configuration error first.")
            elif knobs_form.is_valid() and _apply(
                knobs_form, knobs_form.changes(config), (), request, "Knobs"
            ):
                return redirect("admin:controls")
        elif request.POST.get("panel") == "overrides":
            overrides_form = OverridesForm(request.POST)
            if overrides_form.is_valid():
                wanted = overrides_form.cleaned_data["overrides"]
                changes = {k: v for k, v in wanted.items() if stored.get(k, object()) != v}
                removals = [k for k in stored if k not in wanted]
                if _apply(overrides_form, changes, removals, request, "Overrides"):
                    return redirect("admin:controls")

    knob_rows = [
        {
            "knob": knob,
            "field": knobs_form[knob.name],
            "value": knob.value(config) if config is not None else None,
            "overridden": knob.key in stored,
        }
        for knob in KNOBS
    ]
    override_rows = [
        {
            "key": key,
            "value": json.dumps(value),
            "knob": key in KNOB_KEYS,
            "measurement_only": key in MEASUREMENT_ONLY_KEYS,
        }
        for key, value in sorted(stored.items())
    ]
    context = {
        **admin.site.each_context(request),
        "title": "Router controls",
        "config_error": config_error,
        "knobs_form": knobs_form,
        "knob_rows": knob_rows,
        "overrides_form": overrides_form,
        "override_rows": override_rows,
        "measurement_only_keys": sorted(MEASUREMENT_ONLY_KEYS),
        "measurement_only_note": MEASUREMENT_ONLY_NOTE,
        "dashboard_url": reverse("dashboard"),
        "models_url": reverse("admin:routing_registeredmodel_changelist"),
    }
    return TemplateResponse(request, "admin/controls.html", context)


def _with_controls(get_urls):
    def urls():
        controls = path("controls/", admin.site.admin_view(controls_view), name="controls")
        return [controls, *get_urls()]

    return urls


admin.site.get_urls = _with_controls(admin.site.get_urls)
