"""Remember embedding features across turns, in process memory and in Redis.

An agent resends its whole conversation every turn, so the old tool results a
request asks us to rank are, all but one or two, the ones we ranked last turn.
Embedding them again is the whole cost of relevance ordering; keeping them is
nearly free. Measured with bench/bench_embedders.py (2 busy cores, CPU time):
1 request + 200 tool results of 2,000 characters cost ~45-55 ms with the
builtin embedder and an empty cache, ~10 ms on the next turn, when only the
new request and result are embedded and the batch step reruns (figures in
docs/relevance.md); with an HTTP embedder the saving is a model call per text.

What is kept is an embedder's per-text *feature* (base.Embedder.featurize),
not its final vector: the builtin embedder's IDF depends on the batch, so its
per-text term counts are kept and the batch step is redone each request.
Keys are a digest of the embedder's identity and the text, so two embedders,
or two versions of one, never read each other's features.

Two tiers. The process tier is an LRU bounded by bytes. A second, shared tier
may be handed in (the router gives its Redis one, routing/embedding_tier.py), so
a conversation that moves between workers is still warm. It is an optimisation,
never a dependency: it must report any failure of its own as absence, and this
module does no I/O of its own.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from pinch.embedders.base import Embedder, EmbeddingError

# Process tier budget: ~19,000 builtin features (3.4 KB each) or ~20,000
# 768-dimension vectors, far more than the live sessions of one worker.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024

# What an entry costs beyond its value: the key, the dict slot and the object
# headers, so that many tiny values cannot overrun the budget.
ENTRY_OVERHEAD_BYTES = 160


def cache_key(identity: str, text: str) -> str:
    """A digest of an embedder identity and a text, as hex."""
    who = identity.encode("utf-8", "surrogatepass")
    h = hashlib.blake2b(digest_size=20)
    # Length-prefixed, so no identity/text split can collide with another.
    h.update(len(who).to_bytes(4, "little"))
    h.update(who)
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


class MemoryLRU:
    """A thread-safe LRU of bytes values, bounded by their total size."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        self.max_bytes = max_bytes
        self.bytes = 0
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        found = {}
        with self._lock:
            for key in keys:
                value = self._items.get(key)
                if value is not None:
                    self._items.move_to_end(key)
                    found[key] = value
        return found

    def put_many(self, items: dict[str, bytes]) -> None:
        with self._lock:
            for key, value in items.items():
                size = len(value) + ENTRY_OVERHEAD_BYTES
                if size > self.max_bytes:
                    continue
                old = self._items.pop(key, None)
                if old is not None:
                    self.bytes -= len(old) + ENTRY_OVERHEAD_BYTES
                self._items[key] = value
                self.bytes += size
            while self.bytes > self.max_bytes and self._items:
                _, evicted = self._items.popitem(last=False)
                self.bytes -= len(evicted) + ENTRY_OVERHEAD_BYTES


class SharedTier(Protocol):
    """A cache every worker shares. Both methods report a failure as absence, never raise."""

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]: ...

    def put_many(self, items: dict[str, bytes]) -> None: ...


class EmbeddingCache:
    """The process tier, and the shared tier when one is given."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, shared: SharedTier | None = None):
        self.memory = MemoryLRU(max_bytes)
        self.shared = shared

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        found = self.memory.get_many(keys)
        if self.shared is not None and len(found) < len(keys):
            shared = self.shared.get_many([k for k in keys if k not in found])
            if shared:
                self.memory.put_many(shared)
                found.update(shared)
        return found

    def put_many(self, items: dict[str, bytes]) -> None:
        self.memory.put_many(items)
        if self.shared is not None:
            self.shared.put_many(items)


class CachedEmbedder(Embedder):
    """An embedder whose ``featurize`` asks the cache first and its backend only for the rest.

    A batch still makes at most one backend call, for the texts not cached
    (each distinct text once), so the "one batched call per request" promise
    of the backends holds.
    """

    def __init__(self, embedder: Embedder, cache: EmbeddingCache):
        self.embedder = embedder
        self.cache = cache
        self.identity = embedder.identity

    def featurize(self, texts: Sequence[str]) -> list[bytes]:
        return self._featurize(texts)[1]

    def _featurize(self, texts: Sequence[str]) -> tuple[list[str], list[bytes], bool]:
        """The keys and features of ``texts``, and whether any came from the cache."""
        keys = [cache_key(self.identity, t) for t in texts]
        found = self.cache.get_many(list(dict.fromkeys(keys)))
        cached = bool(found)
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key not in found and key not in missing:
                missing[key] = text
        if missing:
            found.update(self._fresh(missing))
        return keys, [found[k] for k in keys], cached

    def _fresh(self, texts_by_key: dict[str, str]) -> dict[str, bytes]:
        """One backend call for these texts; the features go into the cache."""
        features = self.embedder.featurize(list(texts_by_key.values()))
        if len(features) != len(texts_by_key):
            raise EmbeddingError(
                f"backend returned {len(features)} features for {len(texts_by_key)}"
            )
        new = dict(zip(texts_by_key, features))
        self.cache.put_many(new)
        return new

    def finish(self, features: Sequence[bytes]) -> np.ndarray:
        return self.embedder.finish(features)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Like Embedder.embed; a batch the cache made unusable is embedded afresh.

        A cached entry can go stale without its key changing: a model pulled
        again under the same name with another width, say. Anything the
        backend cannot finish is then treated as absent, as a cache should,
        at the price of one more backend call in that rare case.
        """
        texts = list(texts)
        keys, features, cached = self._featurize(texts)
        try:
            return self.embedder.finish(features)
        except EmbeddingError:
            if not cached:
                raise
        fresh = self._fresh(dict(zip(keys, texts)))
        return self.embedder.finish([fresh[k] for k in keys])
