"""Prefix probe: how much of the last payload of a conversation this one repeats.

Providers bill a repeated prompt prefix at the cached rate. If pruning rewrote
an early message this turn, the prefix breaks there and the discount is lost;
these three integers per decision (matching leading messages, previous and
current payload length) are the evidence.

A client that names its conversations (the Responses API's
``prompt_cache_key``, sent by Codex CLI) is taken at its word. Otherwise a
conversation is recognised without the client's help: a hash of the API
key, the requested model, the first system message and the first user
message. Limits: two conversations that open identically under one key (the
same task run twice at once) share a slot and disturb each other's figures;
editing the first user message starts a new conversation.

Per-message fingerprints of the previous payload are kept for one turn: in
process memory (bounded by bytes, expiring on a timer), or in Redis when
REDIS_URL is set so that every worker and host sees the previous turn. The
conversation's row keeps the latest shortened (``payload_fingerprints``,
pinch.prefix.packed; routing/models/conversation.py): with several workers and
no Redis, a worker whose memory is not the turn just before this one (another
worker served it) compares against that row instead, as the ledger and the
routing state are read back (routing.conversation_state).

With Redis configured, the process's memory does not know the previous turn
(another worker or host may have served it), so figures taken while Redis is
unavailable (down, slow, or its shared breaker open: routing/shared_redis.py)
are measured against this process's memory of the outage only and marked
``fallback``; the decision row says so (``prefix_fallback``) and they can be
left out. That memory is forgotten when Redis answers again, so a later
outage never compares against a turn from an earlier one.

The same store keeps pinch's ledger per conversation (pinch/payback.py: which
tool results were decided, and how), the conversation's routing state
(routing/session_routing.py: its tier and model) and the results pinch sends
whole because the model recalled them (routing.recall.store.restored), each
under its own key prefix: a few integers
that spare rebuilding the decisions from the messages. Both are also on the
conversation's row, where a worker that did not serve the conversation's last
request reads them (routing.pruning.LedgerSlot, routing.session_routing.load_state).

Beside them, in this process's memory only (Python objects, never Redis), each
conversation's last request's figures per message (pinch.carry: token counts,
hashes, fingerprints, what pinch made of each result): the next request takes
them over for the leading messages it repeats exactly, and reads only the rest.
"""

import hashlib
import json
import logging
import sys
import threading
import time
from collections import OrderedDict
from typing import NamedTuple

from pinch import extract_text
from pinch.carry import Carried, MessageFacts
from pinch.prefix import common_prefix_length, message_fingerprints, packed, unpacked
from routing.registry import Registry
from routing.shared_redis import FallbackLog, RedisUnavailable, shared_redis

log = logging.getLogger(__name__)

# Long enough for an agent's think time between turns, short enough to forget idle chats.
TTL_SECONDS = 3600
# Conversations remembered per process; the least recently used is dropped past this.
MAX_CONVERSATIONS = 10_000
# ... and the bytes their values may take, per store (fingerprints, ledgers).
MAX_BYTES = 64 * 1024 * 1024
# A key and the cache's slot for it, beside the value.
ENTRY_OVERHEAD_BYTES = 200
# Characters of text whose hashes are kept per process (DigestMemo): about a
# hundred conversations like session 026 (300,000 characters at its last request).
DIGEST_MEMO_CHARS = 32 * 1024 * 1024
# ... and of the conversations' last requests whose figures per message are kept
# (pinch.carry: their texts, shared with the hash memo's while both hold them).
FACTS_MEMO_CHARS = 32 * 1024 * 1024
REDIS_PREFIX = "router:prefix:"
LEDGER_PREFIX = "router:ledger:"
ROUTE_PREFIX = "router:route:"
RESTORED_PREFIX = "router:restored:"
# How a Redis failure reading or writing each kind of state is logged.
_STATE_NAMES = {
    LEDGER_PREFIX: "pinch_ledger",
    ROUTE_PREFIX: "route_state",
    RESTORED_PREFIX: "recall_restored",
}


def conversation_key(api_key_id, requested_model: str, messages, named: str | None = None) -> str:
    """The conversation's slot: the client's own name for it when given, else its opening."""
    if named is not None:
        seed = json.dumps([api_key_id, "named", named])
        return hashlib.blake2b(seed.encode(), digest_size=16).hexdigest()
    # The roles listed, then each opening one found in C: a conversation with no system
    # message (an agent's over the chat API often has none) was walked to its end, in a
    # loop three times as slow.
    roles = [message.get("role") for message in messages]
    system, user = _first(roles, "system"), _first(roles, "user")
    system = extract_text(messages[system]) if system is not None else None
    user = extract_text(messages[user]) if user is not None else None
    seed = json.dumps([api_key_id, requested_model, system, user])
    return hashlib.blake2b(seed.encode(), digest_size=16).hexdigest()


def _first(values: list, wanted) -> int | None:
    try:
        return values.index(wanted)
    except ValueError:
        return None


def _size(value) -> int:
    """What a stored value costs in memory: a ledger (str) or fingerprints (list of str)."""
    if isinstance(value, str):
        return sys.getsizeof(value) + ENTRY_OVERHEAD_BYTES
    return sys.getsizeof(value) + sum(map(sys.getsizeof, value)) + ENTRY_OVERHEAD_BYTES


class MemoryPrefixStore:
    """This process's turns, bounded by bytes and by count, and expired on a timer.

    Bounded by count alone, 10,000 conversations of 20,000 small messages each
    could hold some 20 GB a worker, and entries expired only when looked up
    again (200 such requests: +440 MB, never given back). So every write drops
    what has expired, then the least recently written past ``max_items`` or
    ``max_bytes``; a value bigger than that is not kept at all. Entries are kept
    in the order they were written, each expiring ``ttl`` after its write: the
    oldest write, first, is the first to expire and the first to go, so a write
    looks at the front alone (a cachetools TTLCache, doing the same in Python
    bookkeeping, took 9-15 us a write, four writes a request).
    """

    def __init__(self, ttl=TTL_SECONDS, max_items=MAX_CONVERSATIONS, max_bytes=MAX_BYTES):
        self.ttl = ttl
        self.max_items = max_items
        self.max_bytes = max_bytes
        self._items: OrderedDict = OrderedDict()  # key -> (value, its size, when it expires)
        self._bytes = 0
        self._lock = threading.Lock()

    def _set(self, key: str, value) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        size = _size(value)
        now = time.monotonic()
        if size <= self.max_bytes:  # else larger than the whole budget: remembered nowhere
            self._items[key] = (value, size, now + self.ttl)
            self._bytes += size
        items = self._items
        while items:
            oldest = next(iter(items))
            _, size, expires = items[oldest]
            if expires > now and len(items) <= self.max_items and self._bytes <= self.max_bytes:
                break
            del items[oldest]
            self._bytes -= size

    def _get(self, key: str):
        found = self._items.get(key)
        if found is None or found[2] <= time.monotonic():
            return None
        return found[0]

    def swap(self, key: str, fingerprints: list[str]) -> list[str] | None:
        """Store this turn's fingerprints; return the previous turn's (or None)."""
        with self._lock:
            previous = self._get(key)
            self._set(key, fingerprints)
        return previous

    def get(self, key: str):
        with self._lock:
            return self._get(key)

    def put(self, key: str, value) -> None:
        with self._lock:
            self._set(key, value)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    @property
    def bytes(self) -> int:
        return self._bytes


class RedisPrefixStore:
    def __init__(self, url: str, ttl=TTL_SECONDS):
        self.ttl = ttl
        self.redis = shared_redis(url)

    def swap(self, key: str, fingerprints: list[str]) -> list[str] | None:
        """Like MemoryPrefixStore.swap; RedisUnavailable when Redis cannot say."""
        # GETSET-with-expiry in one round trip: SET ... GET EX returns the old value.
        value = ",".join(fingerprints)
        old = self.redis.call(
            lambda client: client.set(REDIS_PREFIX + key, value, ex=self.ttl, get=True)
        )
        if old is None:
            return None
        return old.decode().split(",") if old else []

    def get(self, key: str, prefix: str = LEDGER_PREFIX) -> str | None:
        """The value stored for ``key``; RedisUnavailable when Redis cannot say."""
        raw = self.redis.call(lambda client: client.get(prefix + key))
        return raw.decode() if raw is not None else None

    def put(self, key: str, value: str, prefix: str = LEDGER_PREFIX) -> None:
        self.redis.call(lambda client: client.set(prefix + key, value, ex=self.ttl))


class CharMemo:
    """A mapping bounded by the characters of what it keeps, the least recently used dropped
    first; ``size(key, value)`` says what an entry weighs. Faster than a cachetools cache
    (its bookkeeping is Python), which matters at a lookup per message."""

    def __init__(self, max_chars: int, size):
        self.max_chars = max_chars
        self._size = size
        self._items: OrderedDict = OrderedDict()  # key -> (value, its size)
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def __setitem__(self, key, value) -> None:
        size = self._size(key, value)
        if size > self.max_chars:
            return  # larger than the whole budget: kept nowhere
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._chars -= old[1]
            self._items[key] = (value, size)
            self._chars += size
            while self._chars > self.max_chars:
                _, (_, dropped) = self._items.popitem(last=False)
                self._chars -= dropped

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0

    @property
    def chars(self) -> int:
        return self._chars


class DigestMemo(CharMemo):
    """Long texts' hashes (pinch.digests), carried from request to request in this process.

    An agent's request repeats the one before it but for its last few
    messages, so the ledger's digest and the probe's fingerprints find
    nearly every text hashed already. The keys hold the texts themselves:
    bounded by their characters.
    """

    def __init__(self, max_chars: int = DIGEST_MEMO_CHARS):
        super().__init__(max_chars, lambda key, _: sum(map(len, key)))


# One per process: the probe's fingerprints and pinch's ledger digest (routing.pruning) share it.
digests = DigestMemo()


def carried_facts(messages, previous: Carried | None) -> MessageFacts:
    """The request's figures per message (pinch.carry), those of the messages ``previous`` (the
    conversation's, ``PrefixProbe.last_facts``) read already carried over."""
    return MessageFacts(messages, previous, digests)


class PrefixFigures(NamedTuple):
    match: int  # leading messages equal to the previous turn's payload
    previous: int  # the previous payload's length (0: no previous turn known)
    current: int  # this payload's length
    fallback: bool = False  # Redis configured but unavailable: this process's memory only
    packed: str = ""  # this payload's fingerprints, shortened, for the conversation's row


class PrefixProbe:
    def __init__(self, redis_url: str = ""):
        self.memory = MemoryPrefixStore()
        self.ledgers = MemoryPrefixStore()
        self.routes = MemoryPrefixStore()  # routing.session_routing's state per conversation
        self.restored = MemoryPrefixStore()  # routing.recall.store.restored, per conversation
        # Each conversation's last request's figures per message (pinch.carry): Python
        # objects, this process's alone, whichever store the rest is in. Keyed by the
        # conversation's slot, checked message by message: any earlier request serves.
        self.facts = CharMemo(FACTS_MEMO_CHARS, lambda _, carried: carried.chars)
        self.redis = RedisPrefixStore(redis_url) if redis_url else None
        self._on_memory = False  # Redis failed and memory holds the outage's turns
        # Each kind of state logs its outage once, not once a request.
        self._outages = {
            prefix: FallbackLog(
                f"{name}_redis_unavailable reason=%s; kept in this process's memory",
                f"{name}_redis_recovered",
                log,
            )
            for prefix, name in _STATE_NAMES.items()
        }

    def load_ledger(self, key: str) -> str | None:
        """The conversation's pinch ledger as stored (JSON text), or None."""
        return self._load(self.ledgers, LEDGER_PREFIX, key)

    def save_ledger(self, key: str, raw: str) -> None:
        self._save(self.ledgers, LEDGER_PREFIX, key, raw)

    def load_route(self, key: str) -> str | None:
        """The conversation's routing state as stored (JSON text), or None."""
        return self._load(self.routes, ROUTE_PREFIX, key)

    def save_route(self, key: str, raw: str) -> None:
        self._save(self.routes, ROUTE_PREFIX, key, raw)

    def load_restored(self, key: str) -> str | None:
        """The conversation's results sent whole, as routing.recall.store keeps them, or None."""
        return self._load(self.restored, RESTORED_PREFIX, key)

    def save_restored(self, key: str, raw: str) -> None:
        self._save(self.restored, RESTORED_PREFIX, key, raw)

    def _load(self, memory: MemoryPrefixStore, prefix: str, key: str) -> str | None:
        if self.redis is not None:
            try:
                found = self.redis.get(key, prefix)
            except RedisUnavailable as error:  # degrade to memory, never fail the request
                self._outages[prefix].fell_back(error)
            else:
                self._outages[prefix].recovered()
                return found
        return memory.get(key)

    def _save(self, memory: MemoryPrefixStore, prefix: str, key: str, raw: str) -> None:
        if self.redis is not None:
            try:
                self.redis.put(key, raw, prefix)
            except RedisUnavailable as error:
                self._outages[prefix].fell_back(error)
            else:
                self._outages[prefix].recovered()
                return
        memory.put(key, raw)

    def last_facts(self, key: str) -> Carried | None:
        """What the conversation's last request planned in this process read of its messages."""
        return self.facts.get(key)

    def keep_facts(self, key: str, facts: MessageFacts) -> None:
        self.facts[key] = facts.carried()

    def figures(
        self, key: str, payload_messages, turn_lengths=(), recorded=None, facts=None
    ) -> PrefixFigures:
        """This payload against the conversation's previous one.

        ``turn_lengths``: the lengths the previous payload has when it was the
        turn just before this one, or this same request (a retry). Otherwise
        another worker may have served the turns since, and ``recorded(key)``
        (the conversation row's ``payload_fingerprints``; None in a replay)
        is compared instead, when there is one. ``facts``: the request's
        (``carried_facts``), which carry the payload's fingerprints (``MessageFacts.sent``).
        """
        if facts is not None:
            current = facts.sent(payload_messages).fingerprints
        else:
            current = message_fingerprints(payload_messages, digests)
        fallback = False
        if self.redis is None:
            previous = self.memory.swap(key, current)
        else:
            try:
                previous = self.redis.swap(key, current)
            except RedisUnavailable as error:  # degrade, never fail the request
                if not self._on_memory:
                    log.warning("prefix_probe_redis_unavailable reason=%s", error)
                self._on_memory = fallback = True
                previous = self.memory.swap(key, current)
            else:
                if self._on_memory:
                    self._on_memory = False
                    self.memory.clear()
        row = packed(current)
        if recorded is not None and (previous is None or len(previous) not in turn_lengths):
            shortened = unpacked(recorded(key))
            if shortened is not None:
                previous, current = shortened, unpacked(row)
        if previous is None:
            return PrefixFigures(0, 0, len(current), fallback, row)
        match = common_prefix_length(previous, current)
        return PrefixFigures(match, len(previous), len(current), fallback, row)

    def measure(self, key: str, payload_messages) -> tuple[int, int, int]:
        """(matching leading messages, previous payload length, this payload's length)."""
        return tuple(self.figures(key, payload_messages)[:3])


_probes: Registry[PrefixProbe] = Registry()


def prefix_probe(redis_url: str) -> PrefixProbe:
    return _probes.get(redis_url, lambda: PrefixProbe(redis_url))


def forget_conversations() -> None:
    """Empty every process's memory of conversations (hashes, ledgers, routing state)."""
    digests.clear()
    for probe in _probes.items():
        for store in (probe.memory, probe.ledgers, probe.routes, probe.restored, probe.facts):
            store.clear()
