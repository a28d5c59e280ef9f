"""A replica relies on the store's "not revoked" for a grant for a bounded time, and on a revocation for good."""

from __future__ import annotations

from services.resources.revocations import RevocationChecks

LATER = 4_102_444_800.0  # a grant's expiry, far ahead


class _SharedStore:
    """The store every replica asks: the revoked grants, and how often it was asked."""

    def __init__(self) -> None:
        self.revoked_ids: set[str] = set()
        self.asked = 0

    def revoked_among(self, grant_ids: list[str]) -> set[str]:
        self.asked += 1
        return self.revoked_ids.intersection(grant_ids)

    def revoke(self, grant_id: str, expires_at: float) -> bool:
        new = grant_id not in self.revoked_ids
        self.revoked_ids.add(grant_id)
        return new


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_store_is_asked_once_per_grant_per_bound_and_a_revocation_elsewhere_holds_after_it():
    store, clock = _SharedStore(), _Clock()
    a, b = RevocationChecks(store, 2.0, clock), RevocationChecks(store, 2.0, clock)
    assert ["g1" in a.revoked_among(["g1"]) for _ in range(5)] == [False] * 5 and store.asked == 1
    assert b.revoke("g1", LATER) is True
    assert "g1" in b.revoked_among(["g1"])  # on the replica that revoked it: at once
    clock.now += 1.99
    assert "g1" not in a.revoked_among(["g1"])  # a relies on what it was told, within the bound
    clock.now += 0.01
    assert "g1" in a.revoked_among(["g1"])  # ... and not past it
    asked = store.asked
    clock.now += 60
    # revoked for good: not asked again
    assert "g1" in a.revoked_among(["g1"]) and "g1" in b.revoked_among(["g1"]) and store.asked == asked


def test_the_bound_counts_from_when_the_store_was_asked_not_from_its_answer():
    store, clock = _SharedStore(), _Clock()

    class _Slow(_SharedStore):
        def revoked_among(self, grant_ids: list[str]) -> set[str]:
            answer = store.revoked_among(grant_ids)
            clock.now += 1.5  # the answer took 1.5 s to come
            return answer

    checks = RevocationChecks(_Slow(), 2.0, clock)
    assert "g1" not in checks.revoked_among(["g1"])
    store.revoke("g1", LATER)  # revoked elsewhere as the answer arrived
    clock.now += 0.5  # 2 s after the question, 0.5 s after the answer
    assert "g1" in checks.revoked_among(["g1"])


def test_an_answer_asked_before_a_revocation_here_cannot_let_the_grant_read_again():
    store = _SharedStore()

    class _Racing(_SharedStore):
        def revoked_among(self, grant_ids: list[str]) -> set[str]:
            answer = store.revoked_among(grant_ids)
            checks.revoke(grant_ids[0], LATER)  # revoked on this replica while the store's answer was on its way
            return answer

    checks = RevocationChecks(_Racing(), 2.0, _Clock())
    assert "g1" not in checks.revoked_among(["g1"])  # the answer as it was asked
    assert "g1" in checks.revoked_among(["g1"])


def test_with_no_bound_the_store_is_asked_on_every_window():
    store = _SharedStore()
    checks = RevocationChecks(store, 0.0, _Clock())
    assert ["g1" in checks.revoked_among(["g1"]) for _ in range(3)] == [False] * 3 and store.asked == 3
    store.revoke("g1", LATER)
    assert "g1" in checks.revoked_among(["g1"])


def test_a_calls_grants_cost_one_question_and_only_those_not_known_are_asked():
    store, clock = _SharedStore(), _Clock()
    checks = RevocationChecks(store, 2.0, clock)
    store.revoke("g2", LATER)
    assert checks.revoked_among(["g1", "g2", "g3", "g1"]) == {"g2"} and store.asked == 1
    assert checks.revoked_among(["g1", "g2", "g3"]) == {"g2"} and store.asked == 1  # all known now
    store.revoke("g3", LATER)
    assert checks.revoked_among(["g3", "g4"]) == set() and store.asked == 2  # g3 within its bound; g4 asked
    clock.now += 2.0
    assert checks.revoked_among(["g1", "g3"]) == {"g3"} and store.asked == 3
