"""What admin changes of the config: overrides by dotted key, and models added at run time."""

from django.db import models


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
