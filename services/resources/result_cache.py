"""Reused results (issue 42): an analysis whose resolved draft, catalog, row cap and data version are those of one
read before, within the semantic model's `freshness.cache_seconds`, reuses that read's rows instead of reading the
warehouse again (docs/semantic-model.md, "Reused results").

The index lives in the gateway's store, so what one replica read every replica reuses; a few entries are also
kept in memory for a few seconds, which spares the store a lookup per repeated question. A reuse pins a copy of
the rows for the asking turn (results belong to the turn they were offered to) and keeps what the read said of
them: the caption, the query fingerprint, how long the read took and when it happened (evidence.observed_at,
the "read from the warehouse on" under an answer). Looking up never fails an analysis: a store or data version
that cannot be read is logged, and the warehouse is read as if nothing were cached.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from services.resources.freshness import DataVersion
from services.resources.ports import CachedResult, ResultCacheIndex
from services.resources.results import PinnedResult
from shared.data.bounded_json import canonical
from shared.data.caches import SharedMemo, expiring_each
from shared.logs import log

logger = logging.getLogger("tessera.resources.cache")
MEMO_ENTRIES = 256
# How long a replica trusts its memory of an entry before asking the store again: bounds how late a replica
# notices an entry an operator deleted (the data version is read every time, whatever the memory holds).
MEMO_SECONDS = 5.0


@dataclass(frozen=True)
class CacheCounts:
    hits: int  # analyses answered with rows read before
    misses: int  # analyses that looked for such rows, found none, and read the warehouse
    bypassed: int  # analyses that read the warehouse without looking: caching off, or no data version


@dataclass(frozen=True)
class ReadResult:
    """What one warehouse read produced, to keep under its key."""

    resource_id: str
    read_at: float  # seconds since the epoch, when the rows came back
    query_fingerprint: str
    elapsed: float
    interpretation: bytes  # a serialized Interpretation


class ResultCache:
    def __init__(self, index: ResultCacheIndex, version: DataVersion, lifetime_seconds: float,
                 clock: Callable[[], float] = time.time) -> None:
        self._index = index
        self._version = version
        self.lifetime = lifetime_seconds
        self._clock = clock
        self._memo = SharedMemo(expiring_each(
            MEMO_ENTRIES, lambda key, entry, now: min(entry.expires_at, now + MEMO_SECONDS), timer=clock))
        self._lock = threading.Lock()
        self._counts = {"hits": 0, "misses": 0, "bypassed": 0}

    def now(self) -> float:
        return self._clock()

    def key(self, raw_draft: object, periods: list[list], catalog_fingerprint: str, row_cap: int) -> str | None:
        """The key of an analysis: the draft as asked with its relative periods as resolved (dates, not "last
        month"), the catalog, the row cap and the data's version. None when this analysis is not cached."""
        if self.lifetime <= 0:
            self._count("bypassed")
            return None
        try:
            data = self._version.token()
        except Exception as exc:  # the warehouse cannot say: read it, and cache nothing of this read
            log(logger, logging.WARNING, "result cache bypassed: the warehouse's data version cannot be read",
                cause=_first_line(exc))
            self._count("bypassed")
            return None
        document = {"draft": raw_draft, "periods": periods, "catalog": catalog_fingerprint, "row_cap": row_cap,
                    "data": data}
        return hashlib.sha256(canonical(document).encode()).hexdigest()

    def memo_key(self, asked: tuple) -> str | None:
        """A key for something else read from the data (a probe's outcome, kept in memory): `asked` with the
        data's version; None when nothing is kept (caching off, or no data version). Counted in no count."""
        if self.lifetime <= 0:
            return None
        try:
            data = self._version.token()
        except Exception as exc:
            log(logger, logging.WARNING, "probe outcome not kept: the warehouse's data version cannot be read",
                cause=_first_line(exc))
            return None
        return hashlib.sha256(canonical({"asked": list(asked), "data": data}).encode()).hexdigest()

    def find(self, key: str) -> CachedResult | None:
        """The entry for `key` that has not expired, or None (a store that fails is logged, not raised)."""
        entry = self._memo.get(key)
        if entry is not None:
            return entry
        try:
            entry = self._index.cached(key, self._clock())
        except Exception as exc:
            _store_failed("result cache not looked up: the warehouse is read instead", exc)
            self._count("bypassed")
            return None
        if entry is None:
            self._count("misses")
        else:
            self._memo.put(key, entry)
        return entry

    def reuse(self, entry: CachedResult, session_id: str, turn_id: str) -> PinnedResult | None:
        """The entry's rows pinned for this turn, or None when its pinned result is gone (read again)."""
        result = self._index.pin_copy(entry.resource_id, session_id, turn_id)
        self._count("hits" if result is not None else "misses")
        return result

    def keep(self, key: str, read: ReadResult) -> None:
        """Index a read under its key, reusable for the model's lifetime from when it was read."""
        entry = CachedResult(key, read.resource_id, read.read_at, read.read_at + self.lifetime,
                             read.query_fingerprint, read.elapsed, read.interpretation)
        try:
            self._index.keep(entry)
        except Exception as exc:  # the answer stands; the next asker reads the warehouse again
            _store_failed("result not kept in the result cache: the next asker reads the warehouse", exc)
            return
        self._memo.put(key, entry)

    def counts(self) -> CacheCounts:
        with self._lock:
            return CacheCounts(**self._counts)

    def _count(self, what: str) -> None:
        with self._lock:
            self._counts[what] += 1


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _store_failed(message: str, exc: Exception) -> None:
    log(logger, logging.WARNING, message, cause=_first_line(exc))
