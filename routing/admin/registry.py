"""Admin for the model registry: a row is validated by building the effective config with it."""

import re

from django import forms
from django.contrib import admin

from routing.config import ConfigError, apply_overrides
from routing.config.store import (
    check_deletion,
    check_overrides,
    config_path,
    config_source,
    current_config,
    delete_registered_models,
    save_registered_model,
    stored_overrides,
)
from routing.models import RegisteredModel

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


def config_models_context() -> dict:
    """The effective config's models, each marked as from the file or from this registry."""
    registered = set(RegisteredModel.objects.values_list("model_id", flat=True))
    try:
        config = current_config()
    except ConfigError as error:
        return {
            "config_models": [],
            "config_models_error": str(error),
            "config_file": config_path(),
        }
    file_ids = {m.get("id") for m in config_source().data().get("models") or []}
    rows = []
    for model in config.models:
        if model.id not in registered:
            source = "config file"
        elif model.id in file_ids:
            source = "registry (replaces the file's)"
        else:
            source = "registry"
        rows.append({"model": model, "source": source})
    return {"config_models": rows, "config_file": config_path()}


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
            # Cross-reference checks run on the whole config: their message names
            # models.<i>.<field> itself.
            match = re.search(r"\bmodels\.(\d+)\.(\w+)", part)
            field = None
            if match and index is not None and int(match.group(1)) == index:
                field = _MODEL_FIELD_FOR.get(match.group(2))
            self.add_error(field, part)


@admin.register(RegisteredModel)
class RegisteredModelAdmin(admin.ModelAdmin):
    form = RegisteredModelForm
    # Every editable field but the upstream name, which the detail page shows.
    list_display = (
        *(name for name in RegisteredModelForm.Meta.fields if name != "upstream_model"),
        "updated_at",
    )
    list_filter = ("provider", "tier")
    search_fields = ("model_id", "upstream_model")

    def changelist_view(self, request, extra_context=None):
        # The registry lists only the rows added here: beside them, the models the
        # router serves from its config file, read-only, so "0 registered models"
        # does not read as "no models".
        context = {**(extra_context or {}), **config_models_context()}
        return super().changelist_view(request, extra_context=context)

    def save_model(self, request, obj, form, change):
        save_registered_model(obj)

    def get_deleted_objects(self, objs, request):
        # The confirmation page refuses to delete "protected" objects: a model the
        # rest of the config still needs is one, and the reason is shown.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        pks = [obj.pk for obj in objs]
        try:
            check_deletion(RegisteredModel.objects.filter(pk__in=pks))
        except ConfigError as error:
            protected = [*protected, f"the config would be invalid without it: {error}"]
        return deleted, counts, perms_needed, protected

    def delete_model(self, request, obj):
        delete_registered_models(RegisteredModel.objects.filter(pk=obj.pk))

    def delete_queryset(self, request, queryset):
        delete_registered_models(queryset)
