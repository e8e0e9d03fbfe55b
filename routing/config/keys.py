"""Which models can answer now: one whose provider's key variable is unset cannot.

One home for the question, asked at start-up (routing.config.checks: the
warning in gunicorn's log and ``manage.py check --deploy``), again when the
config file is re-read while the router runs (routing.config.source), and by
``GET /v1/models`` (routing.views), which lists only the models that can
answer. A provider with no ``api_key_env`` (a local server, the demo) needs
no key.
"""

from routing.config.schema import ModelConfig, ProviderConfig, RouterConfig


def unset_key(provider: ProviderConfig) -> str | None:
    """The variable ``provider`` takes its key from when that is unset, else None."""
    if provider.api_key_env and not provider.api_key():
        return provider.api_key_env
    return None


def can_answer(config: RouterConfig, model: ModelConfig) -> bool:
    return unset_key(config.providers[model.provider]) is None


def unset_key_warnings(config: RouterConfig) -> list[str]:
    """One sentence per provider whose ``api_key_env`` names an unset variable."""
    warnings = []
    for name, provider in config.providers.items():
        variable = unset_key(provider)
        if variable is None:
            continue
        models = [m.id for m in config.models if m.provider == name]
        warnings.append(
            f"provider {name!r}: the environment variable {variable} is not set, "
            f"so its models ({', '.join(models) or 'none'}) are skipped until it is "
            "(set it before starting the router)"
        )
    return warnings
