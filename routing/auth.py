"""Router API keys: ``Authorization: Bearer <key>`` checked against stored hashes."""

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


def create_api_key(name: str, is_staff: bool = False) -> tuple[ApiKey, str]:
    """Create a key; the raw key is returned once and only its hash is stored."""
    raw = ApiKey.generate_raw_key()
    with transaction.atomic():
        key = ApiKey.objects.create(
            name=name, prefix=raw[:10], key_hash=hash_key(raw), is_staff=is_staff
        )
    return key, raw


def revoke_api_keys(queryset) -> int:
    return queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
