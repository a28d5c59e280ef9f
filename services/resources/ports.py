"""What the gateway needs of its store, one port per job (ResourceStore in store.py is the one adapter)."""

from __future__ import annotations

from typing import Protocol

from services.resources.planner import OutputColumn
from services.resources.results import PinnedResult


class PinnedResults(Protocol):
    """Results the model never sees, kept by id for the grants that window them."""

    def pin(self, session_id: str, turn_id: str, columns: list[OutputColumn], rows: list[list],
            truncated: bool) -> PinnedResult: ...
    def get(self, resource_id: str) -> PinnedResult | None: ...


class TurnBudgets(Protocol):
    """Units per turn of each kind (probe, analysis), counted where every replica sees them."""

    def spend(self, kind: str, session_id: str, turn_id: str, limit: int) -> int | None: ...
    def refund(self, kind: str, session_id: str, turn_id: str) -> None: ...
    def used(self, kind: str, session_id: str, turn_id: str) -> int: ...


class GrantRevocations(Protocol):
    def revoke(self, grant_id: str, expires_at: float) -> bool: ...
    def revoked(self, grant_id: str) -> bool: ...


class ResourceStorage(PinnedResults, TurnBudgets, GrantRevocations, Protocol):
    def ping(self) -> str | None: ...
    def close(self) -> None: ...
