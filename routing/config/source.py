"""The config file on disk and the admin overrides merged on top of it.

The file (``ROUTER_CONFIG``, or the shipped ``routing/config/default_config.yaml``)
is re-read when its modification time changes; ``ConfigSource.effective``
memoises the validated result per set of overrides, so a request pays for
validation only when something changed. A file re-read while the router runs
logs the same warnings as start-up (a provider whose key variable is unset):
a provider added then would otherwise be skipped without a word.
"""

from __future__ import annotations

import copy
import logging
import threading
from pathlib import Path

import yaml

from routing.config.keys import unset_key_warnings
from routing.config.schema import ConfigError, RouterConfig, validate_config

log = logging.getLogger(__name__)

DEFAULT_CONFIG_PATH = Path(__file__).with_name("default_config.yaml")


def read_config_file(path: Path) -> dict:
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(yaml_error_message(path, error)) from None
    return data if data is not None else {}


def yaml_error_message(path, error: yaml.YAMLError) -> str:
    """``config.yaml, line 24, column 3: mapping values are not allowed here``.

    PyYAML's own text cites ``"<unicode string>"`` (it parsed a string, not the
    file) and repeats the line; the file's name and the place are what help.
    """
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or "not valid YAML"
    context = getattr(error, "context", None)
    where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
    return f"{where}: not valid YAML: {problem}" + (f" ({context})" if context else "")


def set_dotted(data: dict, dotted_key: str, value) -> None:
    """Set ``a.b.c`` inside nested dicts, creating the mappings on the way."""
    parts = dotted_key.split(".")
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def apply_overrides(data: dict, overrides: dict, models: list[dict]) -> dict:
    """The file's data with admin overrides on top; models replace by id or add."""
    merged = copy.deepcopy(data)
    for key, value in sorted(overrides.items()):
        set_dotted(merged, key, value)
    if models:
        by_id = {m.get("id"): i for i, m in enumerate(merged.get("models") or [])}
        merged_models = list(merged.get("models") or [])
        for model in models:
            if model["id"] in by_id:
                merged_models[by_id[model["id"]]] = model
            else:
                merged_models.append(model)
        merged["models"] = merged_models
    return merged


class ConfigSource:
    """The file's parsed data, re-read when its modification time changes.

    One per process; the validated result for a given set of overrides is
    memoised so a request pays for validation only when something changed.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._mtime = None
        self._data = None
        self._validated = {}
        # (file data, overrides, models, their config): the last one effective() gave.
        self._last = None
        # The file changed since it was first read: its warnings are logged once it validates.
        self._reloaded = False

    def data(self) -> dict:
        try:
            mtime = self.path.stat().st_mtime_ns
        except OSError as error:
            # One line naming the path (ROUTER_CONFIG), not a traceback from stat().
            raise ConfigError(f"cannot read config file {self.path}: {error.strerror}") from None
        with self._lock:
            if mtime != self._mtime:
                self._data = read_config_file(self.path)
                self._reloaded = self._mtime is not None
                self._mtime = mtime
                self._validated = {}
            return self._data

    def effective(self, overrides: dict, models: list[dict]) -> RouterConfig:
        data = self.data()
        # The config again while the file and the admin rows are the very objects it was
        # made of (routing.config.store keeps the rows until they change): no key built
        # from the repr of every override and model, on each request.
        last = self._last
        if last is not None and last[0] is data and last[1] is overrides and last[2] is models:
            return last[3]
        key = (repr(sorted(overrides.items())), repr(models))
        cached = self._validated.get(key)
        if cached is None:
            cached = validate_config(apply_overrides(data, overrides, models))
            with self._lock:
                if len(self._validated) > 32:
                    self._validated.clear()
                self._validated[key] = cached
                reloaded, self._reloaded = self._reloaded, False
            if reloaded:
                for warning in unset_key_warnings(cached):
                    log.warning("config_reloaded %s: %s", self.path, warning)
        self._last = (data, overrides, models, cached)
        return cached
