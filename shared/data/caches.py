"""Bounded in-memory caches, all under one eviction policy (built on cachetools).

Policy. A cache holds at most `maxsize` entries (`sized_lru`: values of at most `maxsize` bytes in all)
and, when full, drops the least recently used one:
a read refreshes an entry, so what is in use stays and what was used once goes first. An entry that
can go stale also expires, after a fixed time (`expiring`) or at a time of its own (`expiring_each`,
e.g. a signed token's expiry); an expired entry is never returned, and expired entries are dropped
before any live one. A cache is only ever a memo: losing an entry costs a recomputation or a read,
never a different answer, so caches are per process and never shared between replicas.

Threads. cachetools caches are not thread-safe, not even for a read (an LRU read reorders entries).
A cache used from one asyncio event loop only needs no lock. A cache touched from threads (a
ThreadPoolExecutor, a synchronous gRPC server, asyncio.to_thread) is read and written under a
threading.Lock, held only for the access itself: compute a missing value outside the lock (two
threads may then both compute it; the values are equal, and the last one stored stays).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable

from cachetools import LRUCache, TLRUCache, TTLCache


def bounded_lru(maxsize: int) -> LRUCache:
    """At most `maxsize` entries; the least recently used goes first."""
    return LRUCache(maxsize=maxsize)


def sized_lru(max_bytes: int, size_of: Callable[[object], int]) -> LRUCache:
    """bounded_lru by what its values weigh (`size_of(value)`, in bytes) rather than by their number; a value
    heavier than `max_bytes` cannot be stored (storing it raises ValueError)."""
    return LRUCache(maxsize=max_bytes, getsizeof=size_of)


def expiring(maxsize: int, ttl: float, timer: Callable[[], float] = time.monotonic) -> TTLCache:
    """bounded_lru whose entries also expire `ttl` seconds (of `timer`) after they were stored."""
    return TTLCache(maxsize=maxsize, ttl=ttl, timer=timer)


def expiring_each(maxsize: int, expires_at: Callable[[Hashable, object, float], float],
                  timer: Callable[[], float] = time.monotonic) -> TLRUCache:
    """bounded_lru whose entries each expire at their own time: expires_at(key, value, now) on `timer`."""
    return TLRUCache(maxsize=maxsize, ttu=expires_at, timer=timer)


_MISSING = object()


class SharedMemo:
    """A cache that threads share, read and written under its own lock as the policy above says.

    A value may be None (a memo of "nothing there"). A missing one is built outside the lock, so a slow
    build never holds up readers of other keys; two threads may then both build it, and the last stays.
    """

    def __init__(self, cache: LRUCache) -> None:
        self._cache = cache
        self._lock = threading.Lock()

    def get_or_build(self, key: Hashable, build: Callable[[], object]):
        with self._lock:
            found = self._cache.get(key, _MISSING)
        if found is not _MISSING:
            return found
        value = build()
        self.put(key, value)
        return value

    def get(self, key: Hashable, default: object = None):
        with self._lock:
            return self._cache.get(key, default)

    def put(self, key: Hashable, value: object) -> None:
        with self._lock:
            self._cache[key] = value

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._cache

    def clear(self) -> None:
        """Forget everything (the data-plane benchmark measures planning, not the memo)."""
        with self._lock:
            self._cache.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache)
