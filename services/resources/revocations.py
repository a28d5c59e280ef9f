"""Whether a window grant was revoked, asked of the shared store at most once per grant per bound.

The store keeps revocations for every replica (store.py). Asking it on every window cost a query per window, so
a replica remembers the store's "not revoked" for a grant for at most `check_seconds`, counted from when it asked
(an answer that was slow to come is not kept any longer). The bound: a grant revoked on any replica is refused by
every replica at most `check_seconds` after its revocation committed. On the replica that revoked it, at once and
from then on: a grant revoked here (or that the store said was revoked) is remembered as revoked, and that is
looked at first, so an answer asked before a revocation and arriving after it cannot let the grant read again.
With `check_seconds` 0 the store is asked on every window.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from services.resources.ports import GrantRevocations
from shared.data.caches import SharedMemo, bounded_lru, expiring_each

# Grants one replica reads windows with at once; one forgotten is asked about again, which costs a query.
MAX_REMEMBERED = 10_000


class RevocationChecks:
    def __init__(self, store: GrantRevocations, check_seconds: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._check_seconds = check_seconds
        self._clock = clock
        # grant id → when the store was asked and said "not revoked" (on `clock`); gone check_seconds after that
        self._not_revoked = SharedMemo(expiring_each(
            MAX_REMEMBERED, lambda _grant, asked_at, _now: asked_at + check_seconds, clock))
        # grant id → True: revoked for good (an expired grant is refused before this is looked at)
        self._revoked = SharedMemo(bounded_lru(MAX_REMEMBERED))

    def revoked_among(self, grant_ids: Sequence[str]) -> set[str]:
        """The revoked ones of `grant_ids`; those this replica cannot say about are asked of the store in one query
        (a call's windows cost one question, however many)."""
        revoked, unknown = set(), []
        for grant_id in dict.fromkeys(grant_ids):
            known = self.known(grant_id)
            if known is None:
                unknown.append(grant_id)
            elif known:
                revoked.add(grant_id)
        if unknown:
            asked_at = self._clock()
            found = self._store.revoked_among(unknown)
            for grant_id in unknown:
                if grant_id in found:
                    self._revoked.put(grant_id, True)
                    revoked.add(grant_id)
                elif self._check_seconds > 0:
                    self._not_revoked.put(grant_id, asked_at)
        return revoked

    def known(self, grant_id: str) -> bool | None:
        """Whether it is revoked when this replica can say without asking the store; None when it would have to ask."""
        if grant_id in self._revoked:
            return True
        if self._check_seconds > 0 and grant_id in self._not_revoked:
            return False
        return None

    def revoke(self, grant_id: str, expires_at: float) -> bool:
        """Record the revocation in the store (for every replica) and here; False when it was revoked already."""
        recorded = self._store.revoke(grant_id, expires_at)
        self._revoked.put(grant_id, True)
        return recorded
