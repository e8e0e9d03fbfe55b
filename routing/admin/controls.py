"""The controls page (/admin/controls/): the runtime knobs and the persisted config overrides.

The router's admin site (``router_project.admin_site``) mounts it behind
``admin_view``, so it has the same staff check, login redirect and CSRF/no-cache
handling as every other admin page; on top, staff needs the
``routing.change_router_config`` permission (superusers hold every permission).
Changes are saved through ``routing.config.store.set_overrides``, which refuses
provider settings and writes the admin log entry.
"""

import json
import re

import yaml
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse

from routing.config import ConfigError
from routing.config.store import current_config, set_overrides, stored_overrides
from routing.knobs import KNOB_KEYS, KNOBS, MEASUREMENT_ONLY_KEYS, MEASUREMENT_ONLY_NOTE

CONFIG_PERMISSION = "routing.change_router_config"

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
        set_overrides(changes, removals, actor=request.user)
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
    if not request.user.has_perm(CONFIG_PERMISSION):
        raise PermissionDenied("Changing the router's controls needs the router config permission.")
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
