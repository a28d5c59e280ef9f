"""The gateway's result store: pinned, immutable analysis results.

Each result is stored once with its version id and content hash (SHA-256
over the canonical JSON of columns and rows) in the gateway's own database;
windows are served from the pinned copy, never by re-running the query.
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import secrets
import threading
import time
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from services.resources.planner import OutputColumn
from shared.bounded_json import canonical

_METADATA = sa.MetaData()
PINNED = sa.Table(
    "pinned_results", _METADATA,
    sa.Column("resource_id", sa.String(40), primary_key=True),
    sa.Column("version_id", sa.String(40), nullable=False),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("session_id", sa.String(128), nullable=False),
    sa.Column("turn_id", sa.String(128), nullable=False),
    sa.Column("columns_json", sa.Text, nullable=False),
    sa.Column("rows_blob", sa.LargeBinary, nullable=False),
    sa.Column("row_count", sa.Integer, nullable=False),
    sa.Column("truncated", sa.Boolean, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)
CACHE_ENTRIES = 16
_SIX_PLACES = decimal.Decimal("0.000001")


@dataclass(frozen=True)
class PinnedResult:
    resource_id: str
    version_id: str
    content_hash: str
    session_id: str
    turn_id: str
    columns: list[OutputColumn]
    rows: list[list]
    truncated: bool


def _integer(value):
    return int(value)


def _decimal(value):
    # Six places: equal across backends that sum in float (SQLite) or in numeric.
    if type(value) is float:
        text = f"{value:.6f}"
    else:
        exact = value if type(value) is decimal.Decimal else decimal.Decimal(str(value))
        if exact.as_tuple().exponent < -6:  # only round what has more than six places
            exact = exact.quantize(_SIX_PLACES, rounding=decimal.ROUND_HALF_EVEN)
        text = format(exact, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _date(value):
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return (value.date() if isinstance(value, dt.datetime) else value).isoformat()


def _timestamp(value):
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    elif not isinstance(value, dt.datetime):
        value = dt.datetime.combine(value, dt.time())
    return value.replace(tzinfo=None).isoformat(timespec="seconds")


_NORMALIZERS = {"integer": _integer, "decimal": _decimal, "float": float, "boolean": bool, "date": _date,
                "timestamp": _timestamp, "string": str}


def normalize_cell(value, kind: str):
    """One warehouse value as a typed, JSON-safe, backend-independent value."""
    return None if value is None else _NORMALIZERS[kind](value)


def normalize_rows(rows: list[tuple], kinds: list[str]) -> list[list]:
    """normalize_cell over a result, with the per-column choice made once."""
    functions = [_NORMALIZERS[kind] for kind in kinds]
    return [[None if v is None else f(v) for f, v in zip(functions, row, strict=True)] for row in rows]


def content_hash(columns: list[OutputColumn], rows: list[list], rows_json: str | None = None) -> str:
    """SHA-256 of canonical {"columns": [[id, type]…], "rows": […]}; pass rows_json if already serialized."""
    columns_json = canonical([[c.id, c.type] for c in columns])
    document = f'{{"columns":{columns_json},"rows":{rows_json if rows_json is not None else canonical(rows)}}}'
    return hashlib.sha256(document.encode()).hexdigest()


class ResultStore:
    def __init__(self, url: str) -> None:
        parsed = sa.make_url(url)
        if parsed.get_backend_name() == "sqlite" and parsed.database:
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        self.engine = sa.create_engine(parsed)
        if parsed.get_backend_name() == "sqlite":
            # WAL: a commit appends to the log instead of rewriting pages with two fsyncs.
            @sa.event.listens_for(self.engine, "connect")
            def _wal(dbapi_connection, _record):
                dbapi_connection.execute("PRAGMA journal_mode=WAL")
                dbapi_connection.execute("PRAGMA synchronous=NORMAL")
        _METADATA.create_all(self.engine)
        self._cache: OrderedDict[str, PinnedResult] = OrderedDict()
        self._lock = threading.Lock()

    def pin(self, session_id: str, turn_id: str, columns: list[OutputColumn], rows: list[list],
            truncated: bool) -> PinnedResult:
        rows_json = canonical(rows)  # serialized once: for the hash and for the stored blob
        digest = content_hash(columns, rows, rows_json)
        result = PinnedResult(f"res_{secrets.token_hex(10)}", f"v1-{digest[:16]}", digest, session_id, turn_id,
                              columns, rows, truncated)
        columns_json = json.dumps([c.__dict__ for c in columns])
        with self.engine.begin() as connection:
            connection.execute(PINNED.insert().values(
                resource_id=result.resource_id, version_id=result.version_id, content_hash=digest,
                session_id=session_id, turn_id=turn_id, columns_json=columns_json,
                rows_blob=zlib.compress(rows_json.encode(), 1), row_count=len(rows), truncated=truncated,
                created_at=time.time()))
        self._remember(result)
        return result

    def get(self, resource_id: str) -> PinnedResult | None:
        with self._lock:
            if resource_id in self._cache:
                self._cache.move_to_end(resource_id)
                return self._cache[resource_id]
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(PINNED).where(PINNED.c.resource_id == resource_id)).first()
        if row is None:
            return None
        result = PinnedResult(row.resource_id, row.version_id, row.content_hash, row.session_id, row.turn_id,
                              [OutputColumn(**c) for c in json.loads(row.columns_json)],
                              json.loads(zlib.decompress(row.rows_blob)), row.truncated)
        self._remember(result)
        return result

    def _remember(self, result: PinnedResult) -> None:
        with self._lock:
            self._cache[result.resource_id] = result
            while len(self._cache) > CACHE_ENTRIES:
                self._cache.popitem(last=False)

    def close(self) -> None:
        self.engine.dispose()
