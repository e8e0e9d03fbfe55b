"""What ``manage.py check`` and gunicorn's start-up say about the config file.

An invalid or missing file is an error (one line naming the path or the key);
a provider whose key variable is unset is a warning naming the variable and the
models that cannot answer until it is set (``check --deploy``, and gunicorn's
start-up log; not every management command). gunicorn runs ``startup_report`` once,
in its master, before any worker starts (router_project/gunicorn.conf.py).
"""

from django.core.checks import Error, Warning, register

from routing.config import ConfigError
from routing.config.keys import unset_key_warnings


def config_file_error() -> str | None:
    """The config file's problem in one line, or None when it is valid."""
    from routing.config.store import check_config_file, config_path

    try:
        check_config_file()
    except ConfigError as error:
        message, path = str(error), str(config_path())
        return message if path in message else f"{path}: {message}"
    return None


def startup_report() -> tuple[str | None, list[str]]:
    """(the error that must stop the router, warnings to log) for the config file."""
    from routing.config.store import check_config_file

    error = config_file_error()
    if error is not None:
        return f"the router's config is invalid: {error}", []
    return None, unset_key_warnings(check_config_file())


@register()
def config_file_is_valid(app_configs, **kwargs):
    error = config_file_error()
    return [] if error is None else [Error(error, id="routing.E001")]


# A deployment check (``manage.py check --deploy``): every other manage.py command
# would print it first, pinch_replay and pinch_summary included, which call no
# provider. gunicorn logs it at start-up (``startup_report``), where it matters.
@register(deploy=True)
def provider_keys_are_set(app_configs, **kwargs):
    from routing.config.store import check_config_file

    try:
        config = check_config_file()
    except ConfigError:
        return []  # routing.E001 says why
    return [Warning(text, id="routing.W001") for text in unset_key_warnings(config)]
