"""A window's rows in their wire form, encoded once per pinned result and projection.

On the wire, ResolveWindowResponse.rows (a repeated Row) is each row's tag, length and bytes, one row after
another; so a window's rows are a run of encoded rows, whatever the window. A result's rows are encoded in blocks of
BLOCK_ROWS the first time a window reaches them and kept (results are immutable, so a kept block is never stale):
a window is then a join of slices of at most a few blocks, not a message built cell by cell and serialised on every
call. Each pinned value goes in the Cell field of its column's type (fill_rows).

A caller that shows rows (the host, onto a screen's stream) asks for them as JSON instead (ResolveWindowRequest.
rows_as_json): blocks of rows as RFC 8785 text, each row followed by a comma, kept the same way; a window is then
"[" + slices + "]", and no caller turns cells into JSON one by one on every window.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from services.resources.results import PinnedResult
from shared.data.bounded_json import canonical
from shared.data.caches import SharedMemo, sized_lru
from tessera.resources.v1 import resources_pb2

# Small enough that a window far into a large result encodes little beyond itself, large enough that a
# 1,000-row window joins only a few slices.
BLOCK_ROWS = 250
# What the kept blocks of one process may weigh in all; the least recently read go first.
MAX_KEPT_BYTES = 64 * 1024 * 1024

# The Cell field of each column type; a timestamp (None here) is set from its ISO text.
_CELL_FIELDS = {"string": "string_value", "integer": "integer_value", "decimal": "decimal_value",
                "float": "float_value", "boolean": "boolean_value", "date": "date_value", "timestamp": None}
_EPOCH = dt.datetime(1970, 1, 1)


def fill_rows(target, rows: Sequence[Sequence], types: Sequence[str]) -> None:
    """Append `rows` to a repeated Row field in place (not Cell messages built and then copied)."""
    fields = [_CELL_FIELDS[kind] for kind in types]
    for row in rows:
        cells = target.add().cells
        for field, value in zip(fields, row, strict=True):
            cell = cells.add()
            if value is None:
                cell.null_value = True
            elif field is None:
                _set_timestamp(cell.timestamp_value, value)
            else:
                setattr(cell, field, value)


def _set_timestamp(stamp, text: str) -> None:
    """A pinned timestamp (ISO text, UTC, no offset) as seconds and nanos since the epoch: the arithmetic of
    Timestamp.FromDatetime without its checks, which took most of a window's time (a datetime is always in range)."""
    since = dt.datetime.fromisoformat(text).replace(tzinfo=None) - _EPOCH
    stamp.seconds = since.days * 86_400 + since.seconds
    if since.microseconds:
        stamp.nanos = since.microseconds * 1_000


@dataclass(frozen=True, slots=True)
class _Block:
    data: bytes  # the block's rows, each framed as an element of ResolveWindowResponse.rows
    starts: tuple[int, ...]  # where each row begins in `data`, then len(data)

    def weight(self) -> int:
        return len(self.data) + 8 * len(self.starts)

    def rows(self, first: int, end: int) -> bytes:
        return self.data[self.starts[first]:self.starts[end]]


def _json_cells(row: Sequence, types: Sequence[str]) -> list:
    """A row's cells as a screen reads them (the proto's meaning, ResolveWindowResponse.rows_json): pinned values as
    they are, a timestamp (ISO text, UTC) cut to whole seconds."""
    return [_whole_seconds(value) if kind == "timestamp" and value is not None else value
            for kind, value in zip(types, row, strict=True)]


def _whole_seconds(text: str) -> str:
    return dt.datetime.fromisoformat(text).replace(tzinfo=None).isoformat(timespec="seconds")


def _varint_size(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def _encode(result: PinnedResult, positions: tuple[int, ...], index: int) -> _Block:
    rows = result.rows[index * BLOCK_ROWS:(index + 1) * BLOCK_ROWS]
    scratch = resources_pb2.ResolveWindowResponse()
    fill_rows(scratch.rows, [[row[i] for i in positions] for row in rows], [result.columns[i].type for i in positions])
    starts, at = [0], 0
    for row in scratch.rows:
        size = row.ByteSize()
        at += 1 + _varint_size(size) + size  # tag of field 5 (one byte), length, the Row
        starts.append(at)
    return _Block(scratch.SerializeToString(), tuple(starts))


def _encode_json(result: PinnedResult, positions: tuple[int, ...], index: int) -> _Block:
    types = [result.columns[i].type for i in positions]
    starts, pieces, at = [0], [], 0
    for row in result.rows[index * BLOCK_ROWS:(index + 1) * BLOCK_ROWS]:
        piece = (canonical(_json_cells([row[i] for i in positions], types)) + ",").encode()
        pieces.append(piece)
        at += len(piece)
        starts.append(at)
    return _Block(b"".join(pieces), tuple(starts))


_ENCODERS = {"proto": _encode, "json": _encode_json}


class EncodedRows:
    """Windows' rows as wire bytes or JSON text, from blocks kept per (result, projection, form, block number)."""

    def __init__(self, max_bytes: int = MAX_KEPT_BYTES) -> None:
        self._max_bytes = max_bytes
        self._blocks = SharedMemo(sized_lru(max_bytes, _Block.weight))

    def window(self, result: PinnedResult, positions: tuple[int, ...], offset: int, limit: int,
               encode: bool = True, form: str = "proto") -> bytes | None:
        """The rows offset .. offset + limit - 1 (fewer past the end) of `result`, cells in the order of the column
        `positions`: encoded Row elements (`form` "proto") or one JSON array ("json"); without `encode`, None when
        a block they need is not kept."""
        end = min(offset + limit, len(result.rows))
        if offset >= end:  # past the end: no rows
            return b"" if form == "proto" else b"[]"
        pieces = []
        for index in range(offset // BLOCK_ROWS, -(-end // BLOCK_ROWS)):
            block = self._block(result, positions, index, form) if encode else self._blocks.get(
                (result.resource_id, positions, form, index))
            if block is None:
                return None
            base = index * BLOCK_ROWS
            pieces.append(block.rows(max(offset - base, 0), min(end - base, len(block.starts) - 1)))
        joined = b"".join(pieces)
        return joined if form == "proto" else b"[" + joined[:-1] + b"]"  # each JSON row ends with a comma

    def _block(self, result: PinnedResult, positions: tuple[int, ...], index: int, form: str) -> _Block:
        key = (result.resource_id, positions, form, index)
        block = self._blocks.get(key)
        if block is None:
            block = _ENCODERS[form](result, positions, index)
            if block.weight() <= self._max_bytes:  # a block heavier than all that may be kept is used once
                self._blocks.put(key, block)
        return block
