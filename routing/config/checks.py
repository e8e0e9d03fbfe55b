"""`manage.py check` (and migrate) validate the config file, naming a bad key."""

from django.core.checks import Error, register

from routing.config import ConfigError


@register()
def config_file_is_valid(app_configs, **kwargs):
    from routing.config.store import check_config_file, config_path

    try:
        check_config_file()
    except ConfigError as error:
        return [Error(f"{config_path()}: {error}", id="routing.E001")]
    return []
