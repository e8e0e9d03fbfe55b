"""One object per key for the whole process, made on first use: where the shared clients live.

The Redis client and breaker per URL, the prefix probe per Redis URL, the
rate-limit buckets per Redis URL and data folder, the config source per file
path: each must be one per process (two would not share their state: a
breaker that trips alone, a probe that forgets the previous turn), and a
worker's threads ask for them at once. So each is made
once, under a lock, by the first caller. Like routing/shared_redis.py it
imports nothing from Django.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Item = TypeVar("Item")


class Registry(Generic[Item]):
    """Items by key, each made by the first ``get`` that asks for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[Hashable, Item] = {}

    def get(self, key: Hashable, make: Callable[[], Item]) -> Item:
        """The item for ``key``; ``make()`` builds it the first time, under the lock."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                item = self._items[key] = make()
            return item

    def items(self) -> list[Item]:
        """Every item made so far (a copy: the registry may grow while the caller reads it)."""
        with self._lock:
            return list(self._items.values())

    def clear(self) -> None:
        """Forget every item: the next ``get`` of each key makes a new one."""
        with self._lock:
            self._items.clear()
