"""The warehouse's data version: a token read before each analysis that changes when the data it reads changes,
so a reused result is never one read before the data changed (result_cache.py, docs/semantic-model.md
"Reused results").

- SQLite: the database file's change counter (its header, offset 24: every committed write in the default
  rollback-journal mode moves it), the file's size and modification time, and those of a write-ahead log beside
  it (in WAL mode commits land in the log, and the counter may not move until a checkpoint).
- DuckDB: the file's and its write-ahead log's size and modification time (a writer holds the file alone).
- PostgreSQL: for each of the model's tables, the rows inserted, updated and deleted so far
  (pg_stat_user_tables) and its file node (TRUNCATE gives a table a new one, and counts no deletes). A writing
  backend reports its counts when its transaction ends, at most once a second, so the token may lag a commit
  by about that.

Nothing here is exact to the row: a token may change when no row did (a vacuum, a checkpoint, a rolled-back
write), which costs a read; the time-to-live bounds whatever a token misses.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import sqlalchemy as sa

from services.resources.warehouse import Warehouse

SQLITE_HEADER_BYTES = 28  # the change counter is the 4 bytes at offset 24
_TABLE_STATS = sa.table("pg_stat_user_tables", sa.column("relid"), sa.column("n_tup_ins"), sa.column("n_tup_upd"),
                        sa.column("n_tup_del"))


class DataVersion:
    """The version of the data a model's tables hold, in a warehouse."""

    def __init__(self, warehouse: Warehouse, tables: list[str]) -> None:
        self._warehouse = warehouse
        self._tables = sorted(set(tables))
        self._file = Path(warehouse.url.database) if warehouse.dialect in ("sqlite", "duckdb") else None

    def token(self) -> str:
        """The current version, as a short hex digest (raises when the warehouse cannot say)."""
        if self._warehouse.dialect == "postgresql":
            parts = self._table_counts()
        elif self._warehouse.dialect == "sqlite":
            parts = [self._sqlite_counter(), *self._stat(self._file), *self._stat(Path(f"{self._file}-wal"))]
        else:
            parts = [*self._stat(self._file), *self._stat(Path(f"{self._file}.wal"))]
        return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]

    def _sqlite_counter(self) -> int:
        with self._file.open("rb") as header:
            return int.from_bytes(header.read(SQLITE_HEADER_BYTES)[24:28], "big")

    @staticmethod
    def _stat(path: Path) -> tuple[int, int]:
        try:
            status = os.stat(path)
        except FileNotFoundError:  # no write-ahead log: nothing written since the last checkpoint
            return (-1, -1)
        return (status.st_size, status.st_mtime_ns)

    def _table_counts(self) -> list[tuple]:
        tables = [sa.func.to_regclass(name) for name in self._tables]
        query = sa.select(_TABLE_STATS.c.relid, sa.func.pg_relation_filenode(_TABLE_STATS.c.relid),
                          _TABLE_STATS.c.n_tup_ins, _TABLE_STATS.c.n_tup_upd, _TABLE_STATS.c.n_tup_del).where(
            _TABLE_STATS.c.relid.in_(tables)).order_by(_TABLE_STATS.c.relid)
        with self._warehouse.engine.connect() as connection:
            return [tuple(row) for row in connection.execute(query)]
