"""What GET /v1/models and /v1/models/{id} answer: the models a client can ask for now.

The list holds the auto model and every model that can answer now
(routing.config.keys): a model whose provider's key variable is unset is left
out, so a client's model picker (opencode, Codex, the SDKs' ``models.list``)
offers nothing that would fail. Each entry names the ``aliases`` (exact names
and globs) that resolve to it, so a user sees why ``claude-opus-4-8`` works.
Asked for by name, an alias answers as the entry it stands for, under the
name asked; a model that cannot answer is the same final error a request for
it would get, naming the variable to set.
"""

from datetime import UTC, datetime
from difflib import SequenceMatcher

from routing import errors
from routing.config import RouterConfig
from routing.config.keys import can_answer, unset_key
from routing.errors import OPERATOR_FIX_STATUS, RouterError


def _entry(config: RouterConfig, model_id: str, created: int) -> dict:
    """One entry: OpenAI's fields, Anthropic's, and the router's own."""
    entry = {
        "id": model_id,
        "object": "model",
        "created": created,
        "owned_by": "router",
        "type": "model",
        "display_name": model_id,
        "created_at": datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "aliases": [name for name, target in config.aliases.items() if target == model_id],
    }
    model = config.model(model_id)
    if model is None:
        return entry
    return {
        **entry,
        "owned_by": model.provider,
        "tier": model.tier,
        "context_window": model.context_window,
        "capabilities": list(model.capabilities),
    }


def model_list(config: RouterConfig, created: int) -> dict:
    ids = [config.routing.auto_model, *(m.id for m in config.models if can_answer(config, m))]
    data = [_entry(config, model_id, created) for model_id in ids]
    return {
        "object": "list",
        "data": data,
        # Anthropic's list fields: its SDK pages with them.
        "has_more": False,
        "first_id": data[0]["id"],
        "last_id": data[-1]["id"],
    }


def model_entry(config: RouterConfig, name: str, created: int) -> dict:
    """The entry ``name`` stands for; RouterError when nothing answers it now."""
    target = config.resolve_model_name(name)
    model = config.model(target)
    if target != config.routing.auto_model and model is None:
        raise unknown_model_error(config, name)
    if model is not None and not can_answer(config, model):
        raise key_missing_error(config, model.id)
    entry = _entry(config, target, created)
    return entry if target == name else {**entry, "id": name, "alias_of": target}


# How alike a name's start and a glob alias's prefix must be (difflib's ratio) to be a
# typo of it: one letter wrong in 'gpt-' is 0.75, 'clade-' for 'claude-' 0.92.
PREFIX_TYPO_RATIO = 0.75


def _glob_typo_fixes(name: str, patterns) -> list[str]:
    """``name`` with its start spelled as a glob alias's prefix, where it is a typo of one:
    ``clade-opus-4-8`` -> ``claude-opus-4-8`` (``claude-*``), which the glob would serve."""
    fixes = []
    for pattern in patterns:
        prefix = pattern[:-1]
        if not pattern.endswith("*") or not prefix or any(c in prefix for c in "*?["):
            continue
        cuts = range(max(len(prefix) - 2, 1), min(len(prefix) + 2, len(name)) + 1)
        ratios = {cut: SequenceMatcher(None, name[:cut], prefix).ratio() for cut in cuts}
        cut = max(ratios, key=ratios.get, default=None)
        if cut is not None and ratios[cut] >= PREFIX_TYPO_RATIO:
            fixes.append(prefix + name[cut:])
    return fixes


def unknown_model_error(config: RouterConfig, name: str) -> RouterError:
    """The 404 for a name nothing serves, with a did-you-mean (routing.errors): a model id or
    the auto model close to it, or the name with a glob alias's prefix spelled right."""
    return errors.unknown_model_error(
        name,
        config.routing.auto_model,
        [m.id for m in config.models],
        tuple(_glob_typo_fixes(name, config.aliases)),
    )


def key_missing_error(config: RouterConfig, model_id: str) -> RouterError:
    provider = config.model(model_id).provider
    variable = unset_key(config.providers[provider])
    return RouterError(
        OPERATOR_FIX_STATUS,
        f"The model {model_id!r} cannot answer: its provider {provider!r} takes its key from "
        f"the environment variable {variable}, which is not set on the router. Set it and "
        "restart the router, or ask for another model.",
        "provider_key_missing",
        "model",
    )
