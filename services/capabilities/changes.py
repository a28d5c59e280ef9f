"""Data change proposals (Proposal v1, §7) against the warehouse, with the broker's own write credential.

Preparation reads the current value and record version of every change and
fails as a whole if any record is missing or any change is not declared.
Apply runs the approved entries in one transaction, each record updated only
if its version is still the prepared one (then bumped): all or nothing.
Only the tables and columns declared in the policy are ever named; the
credential itself is limited to them (role tessera_writer on PostgreSQL).

The target is the customer's database, not the broker's: when it does not
answer, calls are refused as CHANGE_TARGET_UNAVAILABLE (retryable), and the
outage is logged once when it starts, now and then, once when it ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from services.capabilities.policy import ChangeTarget, FieldSpec
from shared.data.db import Outage, connection_lost
from shared.rpc.refusals import Conflict, Invalid, Unavailable

_PYTHON_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}


class VersionConflict(Exception):
    """A record changed after the proposal was prepared: nothing was applied."""


class TargetCheckRefused(Exception):
    """The database answered a target's zero-row read with a refusal other than "no such table or column"."""


def _names_missing(exc: sa.exc.DBAPIError) -> bool:
    """The database said a table or column is not there (PostgreSQL 42P01/42703, SQLite "no such ...", DuckDB's
    catalog and binder errors), as opposed to any other refusal."""
    original = exc.orig
    if getattr(original, "sqlstate", None) in ("42P01", "42703"):
        return True
    text = str(original).lower()
    return "no such table" in text or "no such column" in text or type(original).__name__ in (
        "CatalogException", "BinderException")


class ChangeTargetUnavailable(Unavailable):
    """The database the changes go to did not answer (or its connection broke). In `apply`, the one
    transaction may or may not have committed: `applied_state` tells, once the target answers again."""

    def __init__(self, entity: str) -> None:
        super().__init__("CHANGE_TARGET_UNAVAILABLE", f"the {entity} records cannot be reached right now; "
                         "try again in a few seconds", {"retryable": "true"})


@dataclass(frozen=True)
class Entry:
    entry_id: str
    record_id: int
    field: str
    before: object
    after: object
    version: int

    def as_json(self) -> dict:
        return {"entry_id": self.entry_id, "record_id": self.record_id, "field": self.field,
                "before": self.before, "after": self.after, "version": self.version}


def _check_value(name: str, spec: FieldSpec, value: object) -> None:
    wrong_type = not isinstance(value, _PYTHON_TYPES[spec.type]) or (
        spec.type != "boolean" and isinstance(value, bool))
    if wrong_type or (spec.enum is not None and value not in spec.enum) or (
            isinstance(value, str) and len(value) > spec.max_length):
        allowed = f"one of {spec.enum}" if spec.enum else f"a {spec.type}"
        raise Invalid("CHANGE_VALUE_INVALID", f"{name}: the value must be {allowed}")


class DataChanges:
    def __init__(self, engine: sa.Engine, targets: dict[str, ChangeTarget], outage: Outage | None = None) -> None:
        self.engine = engine
        self.targets = targets
        self.outage = outage or Outage("data change target")

    @contextmanager
    def _reaching(self, entity: str) -> Iterator[None]:
        """Work on the target: a target that does not answer is refused as such (its driver's words, which
        may name a host or a file, go to the log only)."""
        try:
            yield
        except Exception as exc:
            if connection_lost(exc):
                self.outage.failed(exc)
                raise ChangeTargetUnavailable(entity) from None
            raise
        self.outage.answered()

    def _table(self, target: ChangeTarget) -> sa.TableClause:
        return sa.table(target.table, sa.column(target.key), sa.column(target.version),
                        *(sa.column(name) for name in target.fields))

    def absent_targets(self) -> dict[str, str]:
        """Each declared target the database does not hold, with why: its table, key, version or a declared field
        is not there (a zero-row read of them all). Raises ChangeTargetUnavailable when the database does not
        answer, so that an outage is never taken for an absent table, and TargetCheckRefused when it refuses the
        read for another reason (a missing grant, a lock): neither is a table that is not there. A SQLite file that
        does not exist is not created here: every target is absent from it."""
        url = self.engine.url
        if url.get_backend_name() == "sqlite" and url.database and not Path(url.database).exists():
            return {entity: f"no database file at {url.database}" for entity in self.targets}
        absent = {}
        for entity, target in self.targets.items():
            table = self._table(target)
            try:
                with self._reaching(entity), self.engine.connect() as connection:
                    connection.execute(sa.select(*table.c).where(sa.false())).all()
            except sa.exc.DBAPIError as exc:
                said = " ".join(str(exc.orig).strip().splitlines()[:1])[:160]
                if not _names_missing(exc):
                    raise TargetCheckRefused(f"the data change target {entity!r} (table {target.table}) could not be "
                                             f"read: {said}") from None
                absent[entity] = (f"table {target.table} with columns {', '.join(c.name for c in table.c)} is not "
                                  f"in the database ({said})")
        return absent

    def target(self, entity: str) -> ChangeTarget:
        found = self.targets.get(entity)
        if found is None:
            raise Invalid("CHANGE_ENTITY_UNKNOWN",
                          f"no data changes are declared for {entity!r}; declared: {', '.join(sorted(self.targets))}")
        return found

    def prepare(self, entity: str, changes: list[dict]) -> list[Entry]:
        """Before-values and versions of every change; refused as a whole if any one cannot be prepared."""
        target = self.target(entity)
        seen = set()
        for index, change in enumerate(changes):
            spec = target.fields.get(change["field"])
            if spec is None:
                raise Invalid("CHANGE_FIELD_NOT_DECLARED",
                              f"/changes/{index}/field: {change['field']!r} may not be changed")
            _check_value(f"/changes/{index}/value", spec, change["value"])
            if (change["record_id"], change["field"]) in seen:
                raise Invalid("CHANGE_DUPLICATE", f"/changes/{index}: the same field of the same record twice")
            seen.add((change["record_id"], change["field"]))
        table = self._table(target)
        key = table.c[target.key]
        with self._reaching(entity), self.engine.connect() as connection:
            current = {row[0]: row for row in connection.execute(sa.select(
                key, table.c[target.version], *(table.c[f] for f in target.fields)).where(
                key.in_(sorted({c["record_id"] for c in changes}))))}
        missing = sorted({c["record_id"] for c in changes} - set(current))
        if missing:
            raise Conflict("RECORD_NOT_FOUND", f"{entity} {missing[0]} does not exist; nothing was prepared")
        entries = []
        for index, change in enumerate(changes):
            row = current[change["record_id"]]
            entries.append(Entry(f"e{index + 1}", change["record_id"], change["field"],
                                 row._mapping[change["field"]], change["value"], int(row._mapping[target.version])))
        return entries

    def apply(self, entity: str, entries: list[Entry]) -> int:
        """Apply all entries in one transaction with a version check per record; the records changed."""
        target = self.target(entity)
        table = self._table(target)
        by_record: dict[int, list[Entry]] = {}
        for entry in entries:
            by_record.setdefault(entry.record_id, []).append(entry)
        with self._reaching(entity), self.engine.begin() as connection:
            for record_id, changes in sorted(by_record.items()):
                version = changes[0].version
                updated = connection.execute(
                    table.update().where(table.c[target.key] == record_id, table.c[target.version] == version)
                    .values({target.version: version + 1, **{e.field: e.after for e in changes}}))
                if updated.rowcount != 1:
                    raise VersionConflict(f"{entity} {record_id} changed after the proposal was prepared")
        return len(by_record)

    def applied_state(self, entity: str, entries: list[Entry]) -> str:
        """After a crash mid-apply: 'applied', 'not-applied' or 'diverged' (someone else changed a record)."""
        target = self.target(entity)
        table = self._table(target)
        with self._reaching(entity), self.engine.connect() as connection:
            rows = {row[0]: row._mapping for row in connection.execute(sa.select(
                table.c[target.key], table.c[target.version], *(table.c[f] for f in target.fields)).where(
                table.c[target.key].in_(sorted({e.record_id for e in entries}))))}
        if all(e.record_id in rows and rows[e.record_id][target.version] == e.version for e in entries):
            return "not-applied"
        if all(e.record_id in rows and rows[e.record_id][target.version] == e.version + 1
               and rows[e.record_id][e.field] == e.after for e in entries):
            return "applied"
        return "diverged"
