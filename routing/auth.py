"""Router API keys: ``Authorization: Bearer <key>`` checked against stored hashes.

Every change to a key goes through the services here (``create_api_key``,
``issue_api_key``, ``update_api_key``, ``revoke_api_keys``, ``touch_api_key``);
the admin, the createapikey command and the views call them.
"""

from django.db import transaction
from django.utils import timezone

from routing.models import ApiKey, hash_key


def bearer_token(request) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def key_for_request(request) -> ApiKey | None:
    """The active ApiKey the request's bearer token belongs to, or None."""
    token = bearer_token(request)
    if token is None:
        return None
    return ApiKey.objects.active().filter(key_hash=hash_key(token)).first()


# last_used_at is written at most this often per key: a write per request would
# contend for the database to record nothing an operator needs to the second.
TOUCH_EVERY_SECONDS = 60


def create_api_key(name: str, is_staff: bool = False) -> tuple[ApiKey, str]:
    """Create a key; the raw key is returned once and only its hash is stored."""
    key = ApiKey(name=name, is_staff=is_staff)
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
    return queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


def touch_api_key(key: ApiKey) -> None:
    """Record that the key was used, at most once a minute per key."""
    now = timezone.now()
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() > TOUCH_EVERY_SECONDS:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
