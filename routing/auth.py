"""Router API keys: ``Authorization: Bearer <key>`` or ``x-api-key`` checked against stored hashes.

``x-api-key`` is how Anthropic clients send a key (Claude Code with
``ANTHROPIC_API_KEY``; ``ANTHROPIC_AUTH_TOKEN`` sends a bearer token).
Every change to a key goes through the services here (``create_api_key``,
``issue_api_key``, ``update_api_key``, ``revoke_api_keys``, ``touch_api_key``);
the admin, the createapikey command and the decision write call them.

A key found in the database is remembered by this process for
``KEY_CACHE_SECONDS`` (settings.ROUTER_KEY_CACHE_SECONDS, 30 by default), so a
request pays no query for it. A key revoked through Django (admin, the
``revoke_api_keys`` service) bumps the change counter and stops at the next
request in every worker that sees the counter; revoked any other way, it
stops within ``KEY_CACHE_SECONDS``. That is also how long a key keeps working
while the database is down: past it, the key cannot be checked and the
request gets a 503. Unknown tokens are never cached: each one is looked up.

The remembered keys are found by the token the client sent, so a request of
a key seen recently pays no sha256 (the stored hash is computed only to look
a key up). The tokens stay in this process's memory, as each request's
headers do; they are never logged nor written anywhere.
"""

import threading
import time
from dataclasses import dataclass

from cachetools import LRUCache
from django.conf import settings
from django.db import Error as DatabaseFailure
from django.db import transaction
from django.utils import timezone

from routing import changes
from routing.models import ApiKey, hash_key

MAX_CACHED_KEYS = 1000


class KeyCheckUnavailable(Exception):
    """The database cannot be read and the key was not checked recently enough."""


@dataclass
class _Checked:
    key: ApiKey
    checked_at: float  # monotonic
    version: object


_lock = threading.Lock()
# Token -> _Checked. Least recently used keys go past MAX_CACHED_KEYS (a flood of keys once
# emptied it whole); how long an entry is trusted is the check below (the setting can change
# at run time).
_checked: LRUCache = LRUCache(MAX_CACHED_KEYS)


def bearer_token(request) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def key_for_request(request) -> ApiKey | None:
    """The active ApiKey the request's bearer token (or x-api-key) belongs to, or None.

    Raises KeyCheckUnavailable when the database is down and the key was not
    checked in the last KEY_CACHE_SECONDS.
    """
    token = bearer_token(request) or request.META.get("HTTP_X_API_KEY", "").strip()
    if not token:
        return None
    with _lock:
        entry = _checked.get(token)
    version = changes.version()
    age_limit = settings.ROUTER_KEY_CACHE_SECONDS
    now = time.monotonic()
    if entry is not None and changes.fresh(entry.version, entry.checked_at, version, age_limit):
        return entry.key
    try:
        key = ApiKey.objects.active().filter(key_hash=hash_key(token)).first()
    except DatabaseFailure:
        if entry is not None and now - entry.checked_at < age_limit:
            return entry.key
        raise KeyCheckUnavailable() from None
    with _lock:
        if key is None:
            _checked.pop(token, None)
        else:
            _checked[token] = _Checked(key, now, version)
    return key


def forget_checked_keys() -> None:
    """Drop this process's remembered keys (the next request of each key is looked up)."""
    with _lock:
        _checked.clear()


# last_used_at is written at most this often per key: a write per request would
# contend for the database to record nothing an operator needs to the second.
TOUCH_EVERY_SECONDS = 60


def create_api_key(name: str, is_staff: bool = False, limits=None) -> tuple[ApiKey, str]:
    """Create a key; the raw key is returned once and only its hash is stored.

    ``limits``: field -> value, checked by routing.limits.settings.check_limits.
    """
    key = ApiKey(name=name, is_staff=is_staff)
    if limits:
        from routing.limits.settings import check_limits, key_limits

        for field, value in check_limits(key_limits(key), limits).items():
            setattr(key, field, value)
    return key, issue_api_key(key)


def issue_api_key(key: ApiKey) -> str:
    """Give an unsaved key its secret and save it; returns the raw key, the only time it exists."""
    raw = ApiKey.generate_raw_key()
    key.prefix = raw[:10]  # "rk-" and 7 characters: enough to tell keys apart in a list
    key.key_hash = hash_key(raw)
    with transaction.atomic():
        key.save(force_insert=True)
    return raw


def update_api_key(key: ApiKey, fields=("name", "is_staff", "revoked_at")) -> None:
    """Save what admin may change on an existing key (never its hash)."""
    with transaction.atomic():
        key.save(update_fields=list(fields))


def revoke_api_keys(queryset) -> int:
    revoked = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
    if revoked:
        changes.bump()
    return revoked


def touch_due(key: ApiKey | None) -> bool:
    """Is the key's last_used_at old enough to be written again?"""
    return key is not None and (
        key.last_used_at is None
        or (timezone.now() - key.last_used_at).total_seconds() > TOUCH_EVERY_SECONDS
    )


def touch_api_key(key: ApiKey) -> None:
    """Record that the key was used, at most once a minute per key.

    The decision write calls it in its own transaction (one write per request);
    the key object, cached by this process, learns the time too.
    """
    if touch_due(key):
        now = timezone.now()
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
