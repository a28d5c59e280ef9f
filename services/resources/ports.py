"""What the gateway needs of its store, one port per job (ResourceStore in store.py is the one adapter)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from services.resources.query_compiler import OutputColumn
from services.resources.results import PinnedResult


class PinnedResults(Protocol):
    """Results the model never sees, kept by id for the grants that window them."""

    def pin(self, session_id: str, turn_id: str, columns: list[OutputColumn], rows: list[list],
            truncated: bool) -> PinnedResult: ...
    def get(self, resource_id: str) -> PinnedResult | None: ...
    def remembered(self, resource_id: str) -> PinnedResult | None: ...  # get() when it needs no read (else None)


class TurnBudgets(Protocol):
    """Units per turn of each kind (probe, analysis), counted where every replica sees them."""

    def spend(self, kind: str, session_id: str, turn_id: str, limit: int) -> int | None: ...
    def refund(self, kind: str, session_id: str, turn_id: str) -> None: ...
    def used(self, kind: str, session_id: str, turn_id: str) -> int: ...


@dataclass(frozen=True)
class AnalysisLimits:
    per_turn: int
    per_session: int
    variants_per_target: int  # variants a session may ask that search one hidden value (target), however disguised
    searches_per_session: int  # distinct oracle-prone drafts a session may ask, all targets together


@dataclass(frozen=True)
class AnalysisRefusal:
    """One audited refusal: which bound (turn, session: the budget; target, searches: threshold search), the
    units or variants used when it was refused, and the bound. `shape` is a fingerprint, never a value: of the
    searched target for a threshold-search refusal (the same however the search is disguised), of the draft's shape
    otherwise."""

    refused_at: float
    session_id: str
    turn_id: str
    reason: str
    budget: str
    shape: str
    count: int
    bound: int


@dataclass(frozen=True)
class Search:
    """What an oracle-prone draft searches: the fingerprints of its targets, its variant (selections masked) and
    the whole draft (kept in the store only)."""

    targets: tuple[str, ...]
    variant: str
    asked: str


@dataclass(frozen=True)
class Admission:
    turn_used: int = 0
    session_used: int = 0
    refused: AnalysisRefusal | None = None


class AnalysisAdmissions(Protocol):
    """Analyses counted per turn and per session, and the variants of each searched target a session asked, where
    every replica sees them; refusals audited."""

    def admit(self, session_id: str, turn_id: str, shape: str, search: Search | None,
              limits: AnalysisLimits) -> Admission: ...
    def release(self, session_id: str, turn_id: str) -> None: ...
    def session_used(self, session_id: str) -> int: ...
    def refusals(self, session_id: str) -> list[AnalysisRefusal]: ...


@dataclass(frozen=True)
class CachedResult:
    """A result the warehouse gave for one cache key: its pinned rows (`resource_id`), when they were read, until
    when they may be reused, and what the analysis said of them (query fingerprint, elapsed, the caption as a
    serialized Interpretation)."""

    key: str
    resource_id: str
    read_at: float
    expires_at: float
    query_fingerprint: str
    elapsed: float
    interpretation: bytes


class ResultCacheIndex(Protocol):
    """Which pinned result answers a cache key, where every replica sees it; a reuse pins a copy of its own."""

    def cached(self, key: str, now: float) -> CachedResult | None: ...
    def keep(self, entry: CachedResult) -> None: ...
    def pin_copy(self, resource_id: str, session_id: str, turn_id: str) -> PinnedResult | None: ...


class GrantRevocations(Protocol):
    def revoke(self, grant_id: str, expires_at: float) -> bool: ...
    def revoked_among(self, grant_ids: list[str]) -> set[str]: ...


class ResourceStorage(PinnedResults, TurnBudgets, AnalysisAdmissions, ResultCacheIndex, GrantRevocations, Protocol):
    def ping(self) -> str | None: ...
    def close(self) -> None: ...
