"""Prefix probe: how much of the last payload of a conversation this one repeats.

Providers bill a repeated prompt prefix at the cached rate. If pruning rewrote
an early message this turn, the prefix breaks there and the discount is lost;
these three integers per decision (matching leading messages, previous and
current payload length) are the evidence.

A conversation is recognised without the client's help: a hash of the API
key, the requested model, the first system message and the first user
message. Limits: two conversations that open identically under one key (the
same task run twice at once) share a slot and disturb each other's figures;
editing the first user message starts a new conversation.

Per-message fingerprints of the previous payload are kept for one turn only:
in process memory (bounded, expiring), or in Redis when REDIS_URL is set so
that every worker and host sees the previous turn. They never reach the
database. A Redis failure falls back to memory and is logged.
"""

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict

from pinch import extract_text
from pinch.prefix import common_prefix_length, message_fingerprints

log = logging.getLogger(__name__)

# Long enough for an agent's think time between turns, short enough to forget idle chats.
TTL_SECONDS = 3600
# Conversations remembered per process; the oldest is dropped past this.
MAX_CONVERSATIONS = 10_000
REDIS_PREFIX = "router:prefix:"


def conversation_key(api_key_id, requested_model: str, messages) -> str:
    first = {}
    for message in messages:
        role = message.get("role")
        if role in ("system", "user") and role not in first:
            first[role] = extract_text(message)
        if len(first) == 2:
            break
    seed = json.dumps([api_key_id, requested_model, first.get("system"), first.get("user")])
    return hashlib.blake2b(seed.encode(), digest_size=16).hexdigest()


class MemoryPrefixStore:
    def __init__(self, ttl=TTL_SECONDS, max_items=MAX_CONVERSATIONS):
        self.ttl = ttl
        self.max_items = max_items
        self._items = OrderedDict()
        self._lock = threading.Lock()

    def swap(self, key: str, fingerprints: list[str]) -> list[str] | None:
        """Store this turn's fingerprints; return the previous turn's (or None)."""
        now = time.monotonic()
        with self._lock:
            previous = self._items.pop(key, None)
            self._items[key] = (now, fingerprints)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)
        if previous is None or now - previous[0] > self.ttl:
            return None
        return previous[1]


class RedisPrefixStore:
    def __init__(self, url: str, ttl=TTL_SECONDS):
        import redis

        self.ttl = ttl
        self._client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)

    def swap(self, key: str, fingerprints: list[str]) -> list[str] | None:
        # GETSET-with-expiry in one round trip: SET ... GET EX returns the old value.
        old = self._client.set(REDIS_PREFIX + key, ",".join(fingerprints), ex=self.ttl, get=True)
        if old is None:
            return None
        return old.decode().split(",") if old else []


class PrefixProbe:
    def __init__(self, redis_url: str = ""):
        self.memory = MemoryPrefixStore()
        self.redis = RedisPrefixStore(redis_url) if redis_url else None

    def measure(self, key: str, payload_messages) -> tuple[int, int, int]:
        """(matching leading messages, previous payload length, this payload's length)."""
        current = message_fingerprints(payload_messages)
        previous = None
        if self.redis is not None:
            try:
                previous = self.redis.swap(key, current)
            except Exception as error:  # any Redis failure: degrade, never fail the request
                log.warning("prefix_probe_redis_unavailable reason=%s", type(error).__name__)
                previous = self.memory.swap(key, current)
        else:
            previous = self.memory.swap(key, current)
        if previous is None:
            return 0, 0, len(current)
        return common_prefix_length(previous, current), len(previous), len(current)


_probe_lock = threading.Lock()
_probes: dict[str, PrefixProbe] = {}


def prefix_probe(redis_url: str) -> PrefixProbe:
    with _probe_lock:
        probe = _probes.get(redis_url)
        if probe is None:
            probe = _probes[redis_url] = PrefixProbe(redis_url)
        return probe
