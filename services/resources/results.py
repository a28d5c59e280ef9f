"""Pinned, immutable analysis results: typed cells and their content hash.

Each result is stored once (store.py) with its version id and content hash
(SHA-256 over the canonical JSON of columns and rows); windows are served
from the pinned copy, never by re-running the query.
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
from dataclasses import dataclass

from services.resources.query_compiler import OutputColumn
from shared.data.bounded_json import canonical

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
        text = format(exact, "f")
        dot = text.find(".")
        if dot >= 0 and len(text) - dot > 7:  # only round what has more than six places
            text = format(exact.quantize(_SIX_PLACES, rounding=decimal.ROUND_HALF_EVEN), "f")
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
    if value.tzinfo is not None:
        value = value.replace(tzinfo=None)
    return value.isoformat(timespec="seconds")


_NORMALIZERS = {"integer": _integer, "decimal": _decimal, "float": float, "boolean": bool, "date": _date,
                "timestamp": _timestamp, "string": str}


def normalize_cell(value, kind: str):
    """One warehouse value as a typed, JSON-safe, backend-independent value."""
    return None if value is None else _NORMALIZERS[kind](value)


def normalize_rows(rows: list[tuple], kinds: list[str]) -> list[list]:
    """normalize_cell over a result, column by column: the per-column choice is made once, and values
    that already have their JSON type (the common case) are kept without a call."""
    if not rows:
        return []
    columns = [_normalize_column(values, kind)
               for values, kind in zip(zip(*rows, strict=True), kinds, strict=True)]
    return [list(row) for row in zip(*columns, strict=True)]


_NATIVE = {"string": str, "integer": int, "float": float, "boolean": bool}


def _normalize_column(values: tuple, kind: str) -> list:
    native = _NATIVE.get(kind)
    if native is not None:
        convert = _NORMALIZERS[kind]
        return [v if v is None or type(v) is native else convert(v) for v in values]
    convert = _NORMALIZERS[kind]
    if kind in ("date", "timestamp"):
        # Dates repeat down a dimension (one month per category, say): each distinct one is converted once.
        seen = {value: convert(value) for value in set(values) if value is not None}
        return [None if v is None else seen[v] for v in values]
    return [None if v is None else convert(v) for v in values]


def content_hash(columns: list[OutputColumn], rows: list[list], rows_json: str | None = None) -> str:
    """SHA-256 of canonical {"columns": [[id, type]…], "rows": […]}; pass rows_json if already serialized."""
    columns_json = canonical([[c.id, c.type] for c in columns])
    document = f'{{"columns":{columns_json},"rows":{rows_json if rows_json is not None else canonical(rows)}}}'
    return hashlib.sha256(document.encode()).hexdigest()
