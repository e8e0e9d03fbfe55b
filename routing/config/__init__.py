"""The router's configuration: schema, the file on disk, the effective config, checks.

- ``schema``: the one strict pydantic schema (file and admin overrides alike);
- ``source``: the YAML file, re-read when it changes, with overrides merged on top;
- ``store``: the effective config of a request (file + admin rows) and the named
  services that change the overrides;
- ``checks``: ``manage.py check`` validates the file;
- ``default_config.yaml``: the embedded defaults, every key documented.

The schema's names are re-exported here because nearly every module needs them;
``store`` touches the database and is imported by name where it is used.
"""

from routing.config.pinch_blocks import PinchConfig, RelevanceConfig
from routing.config.schema import (
    ConfigError,
    ModelConfig,
    ProviderConfig,
    RouterConfig,
    validate_config,
)
from routing.config.source import DEFAULT_CONFIG_PATH, apply_overrides

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "ConfigError",
    "ModelConfig",
    "PinchConfig",
    "ProviderConfig",
    "RelevanceConfig",
    "RouterConfig",
    "apply_overrides",
    "validate_config",
]
