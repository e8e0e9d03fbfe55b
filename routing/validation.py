"""Pydantic's validation errors as a person reads them, for API bodies and the config file.

Pydantic locates an error inside its own machinery: a discriminated union's
tag and a union's member names sit in the path (``messages.0.user.content.str``,
``...content.list[ContentPart]``), one error per union member. A reader wants
the path in the data they sent (``messages[0].content``) and one sentence
about it (``must be a string, a list of content parts or null``). So:

- the path keeps only the parts that exist in the data, walking it from the
  root (a union tag or member name is not a key of the value);
- a type error is dropped when another error at the same place went deeper
  (the value had the right shape and failed inside it), and the type errors
  left at one place become one "must be A, B or C";
- an error at the top level (a cross-check of the whole config) has no path
  prefix: its message names its keys itself;
- an unknown key says which known key it is close to ("did you mean").
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from pydantic import BaseModel, ValidationError

# What a value must be, by pydantic's type error; these name no internals.
_EXPECTED = {
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "none_required": "null",
}
# Close enough to suggest: "budget_token" -> "budget_tokens", not "tier" -> "tiers_x".
SUGGEST_CUTOFF = 0.75


def data_path(data, location: tuple) -> tuple:
    """The parts of ``location`` that are keys or indexes of ``data``, walking it from the root."""
    kept = []
    node = data
    for part in location:
        in_dict = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_dict or in_list:
            node = node[part]
        else:
            continue  # a union tag or member name: pydantic's, not the caller's
        kept.append(part)
    return tuple(kept)


def known_keys(model: type[BaseModel]) -> set[str]:
    """Every field name of ``model`` and of the models its fields hold, recursively."""
    names: set[str] = set()
    seen: set[type] = set()

    def visit(cls):
        if cls in seen:
            return
        seen.add(cls)
        for name, field in cls.model_fields.items():
            names.add(name)
            for inner in _models_in(field.annotation):
                visit(inner)

    visit(model)
    return names


def _models_in(annotation) -> Iterable[type[BaseModel]]:
    """The models inside a field's type: ``X``, ``list[X]``, ``dict[str, X]``, ``X | None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        yield from _models_in(arg)


def _unknown_key(key, vocabulary: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(key), sorted(vocabulary), n=1, cutoff=SUGGEST_CUTOFF)
    return f"unknown key (did you mean {close[0]!r}?)" if close else "unknown key"


def _one_of(expected: list[str]) -> str:
    unique = list(dict.fromkeys(expected))
    if len(unique) == 1:
        return f"must be {unique[0]}"
    return f"must be {', '.join(unique[:-1])} or {unique[-1]}"


def readable_errors(
    error: ValidationError, data, vocabulary: Iterable[str] = ()
) -> list[tuple[tuple, str]]:
    """[(path in the data, sentence)], in pydantic's order."""
    items = [(error_place(data, item), item) for item in error.errors()]
    # Every proper prefix of an error's path: a place some error went deeper than.
    deeper = {path[:n] for path, _ in items for n in range(len(path))}
    by_path: dict[tuple, list] = {}
    for path, item in items:
        if item["type"] in _EXPECTED and path in deeper:
            continue  # the value had the right shape; the error inside it says what is wrong
        by_path.setdefault(path, []).append(item)
    lines = []
    for path, group in by_path.items():
        expected = [_EXPECTED[i["type"]] for i in group if i["type"] in _EXPECTED]
        others = [i for i in group if i["type"] not in _EXPECTED]
        if expected:
            lines.append((path, _one_of(expected)))
        for item in others:
            lines.append((path, _sentence(item, vocabulary)))
    return lines


def error_place(data, item) -> tuple:
    """Where a pydantic error item is, in the data; a missing key or tag is named, though absent."""
    path = data_path(data, item["loc"])
    if item["type"] == "missing" and item["loc"]:
        return (*path, item["loc"][-1])
    if item["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return (*path, str(item["ctx"]["discriminator"]).strip("'"))
    return path


def _sentence(item, vocabulary) -> str:
    if item["type"] == "extra_forbidden":
        # The unknown key is the last part of pydantic's location.
        return _unknown_key(item["loc"][-1], vocabulary)
    if item["type"] in ("missing", "union_tag_not_found"):
        return "required"
    if item["type"] == "too_short":
        return f"must have at least {item['ctx']['min_length']} item(s)"
    if item["type"] == "too_long":
        return f"must have at most {item['ctx']['max_length']} item(s)"
    if item["type"] == "union_tag_invalid":
        return f"must be one of {item['ctx']['expected_tags']}, not {item['ctx']['tag']!r}"
    return item["msg"].removeprefix("Value error, ")


def describe(error: ValidationError, data, name_path, vocabulary: Iterable[str] = ()) -> str:
    """The errors in one line: ``path: sentence; path: sentence`` (no path at the top level)."""
    parts = []
    for path, message in readable_errors(error, data, vocabulary):
        shown = name_path(path)
        parts.append(f"{shown}: {message}" if shown else message)
    return "; ".join(dict.fromkeys(parts))


def dotted(path: tuple) -> str:
    """('models', 1, 'provider') -> 'models.1.provider', as the config's keys are named."""
    return ".".join(str(part) for part in path)
