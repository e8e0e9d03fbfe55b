"""The one service that sets a key's budgets and rate limits, for admin and the commands.

``check_limits`` refuses what cannot be meant (a negative budget, a soft
budget above the hard one, an unknown period) with a message naming the
field; ``set_key_limits`` saves the change, writes an admin log entry per
field changed (before -> after, like the config overrides), and bumps the
change counter so every worker's cached copy of the key (routing.auth)
carries the new limits from its next request.
"""

from __future__ import annotations

import json

from django.db import transaction

from routing import changes
from routing.models import BUDGET_PERIODS, ApiKey

LIMIT_FIELDS = (
    "rpm_limit",
    "tpm_limit",
    "budget_usd",
    "soft_budget_usd",
    "budget_period",
    "budget_fallback",
)

_PERIODS = {name for name, _ in BUDGET_PERIODS}


class LimitsError(ValueError):
    """Limits that cannot be saved; the message names the field and why."""


def check_limits(current: dict, wanted: dict) -> dict:
    """``current`` limits with ``wanted`` applied, checked; raises LimitsError."""
    unknown = set(wanted) - set(LIMIT_FIELDS)
    if unknown:
        raise LimitsError(f"not a limit: {', '.join(sorted(unknown))}")
    merged = {**current, **wanted}
    for name in ("rpm_limit", "tpm_limit"):
        value = merged.get(name)
        if value is not None and (not isinstance(value, int) or value < 1):
            raise LimitsError(f"{name} must be a whole number of at least 1, or empty (no limit)")
    for name in ("budget_usd", "soft_budget_usd"):
        value = merged.get(name)
        if value is not None and not value >= 0:
            raise LimitsError(f"{name} must be 0 or more USD, or empty (no budget)")
    if merged.get("budget_period") not in _PERIODS:
        raise LimitsError(f"budget_period must be one of {', '.join(sorted(_PERIODS))}")
    hard, soft = merged.get("budget_usd"), merged.get("soft_budget_usd")
    if hard is not None and soft is not None and soft > hard:
        raise LimitsError(f"soft_budget_usd ({soft:g}) must not be above budget_usd ({hard:g})")
    return merged


def key_limits(key: ApiKey) -> dict:
    return {name: getattr(key, name) for name in LIMIT_FIELDS}


def set_key_limits(key: ApiKey, wanted: dict, actor=None) -> list[str]:
    """Apply ``wanted`` (field -> value) to a saved key; returns the fields that changed."""
    before = key_limits(key)
    after = check_limits(before, wanted)
    changed = [name for name in LIMIT_FIELDS if after[name] != before[name]]
    if not changed:
        return []
    with transaction.atomic():
        for name in changed:
            setattr(key, name, after[name])
        key.save(update_fields=changed)
        if actor is not None:
            _log(actor, key, {name: (before[name], after[name]) for name in changed})
    changes.bump()
    return changed


def _log(actor, key: ApiKey, changed: dict) -> None:
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.contrib.contenttypes.models import ContentType

    LogEntry.objects.create(
        user_id=actor.pk,
        content_type=ContentType.objects.get_for_model(ApiKey),
        object_id=str(key.pk),
        object_repr=str(key)[:200],
        action_flag=CHANGE,
        change_message="; ".join(
            f"{name}: {json.dumps(old)} -> {json.dumps(new)}"
            for name, (old, new) in changed.items()
        ),
    )
