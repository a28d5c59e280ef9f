"""A window's rows on the wire: each pinned value in the Cell field of its column's type, encoded once per
result and projection (window_rows.py) and sent as bytes that decode to exactly the message the rows were
built into before (one Cell per value, timestamps through Timestamp.FromDatetime)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from google.protobuf import timestamp_pb2

from services.resources.gateway import COLUMN_ROLES, COLUMN_TYPES
from services.resources.query_compiler import OutputColumn
from services.resources.results import PinnedResult
from services.resources.server import ResourceGatewayService
from services.resources.window_rows import BLOCK_ROWS, EncodedRows, fill_rows
from shared.data.bounded_json import canonical
from shared.rpc.encoded_replies import EncodedReply
from tessera.common.v1 import common_pb2
from tessera.resources.v1 import resources_pb2
from tests.resources.conftest import in_process
from tests.resources.unit.test_windows_and_probes import grant

TYPES = ["string", "integer", "decimal", "float", "boolean", "date", "timestamp"]
_FIELDS = {"string": "string_value", "integer": "integer_value", "decimal": "decimal_value",
           "float": "float_value", "boolean": "boolean_value", "date": "date_value"}


def test_every_column_type_becomes_its_own_cell_and_none_a_null():
    reply = resources_pb2.ResolveWindowResponse()
    fill_rows(reply.rows, [["Web", 3, "1.50", 2.5, True, "2024-01-02", "2024-01-02T03:04:05"], [None] * 7], TYPES)
    first, second = (list(row.cells) for row in reply.rows)
    assert [cell.WhichOneof("value") for cell in first] == [
        "string_value", "integer_value", "decimal_value", "float_value", "boolean_value", "date_value",
        "timestamp_value"]
    assert (first[0].string_value, first[1].integer_value, first[2].decimal_value, first[3].float_value,
            first[4].boolean_value, first[5].date_value) == ("Web", 3, "1.50", 2.5, True, "2024-01-02")
    assert first[6].timestamp_value.ToDatetime(dt.UTC) == dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert [cell.WhichOneof("value") for cell in second] == ["null_value"] * 7


def test_a_false_or_zero_is_a_value_not_a_null():
    reply = resources_pb2.ResolveWindowResponse()
    fill_rows(reply.rows, [[False, 0, "", "1970-01-01T00:00:00"]], ["boolean", "integer", "string", "timestamp"])
    assert [cell.WhichOneof("value") for cell in reply.rows[0].cells] == [
        "boolean_value", "integer_value", "string_value", "timestamp_value"]


def _pinned_rows(count: int) -> list[list]:
    """Rows as normalize_rows pins them, a null in each column now and then, and the edges of each type."""
    stamps = ["1969-12-31T23:59:59", "1970-01-01T00:00:00", "2024-02-29T12:00:00", "2024-03-01T00:00:00.250000",
              "9999-12-31T23:59:59", "0001-01-01T00:00:00"]
    texts = ["Web", "", "Zürich – 東京 ✓", "x" * 300]
    rows = []
    for i in range(count):
        row = [texts[i % 4], (-1) ** i * (i * 2**40 + i), ("-0.000001", "12345678901234567890.5", "0", "7.25")[i % 4],
               (-2.5, 0.0, 1e300, 1 / 3)[i % 4], bool(i % 2), ("2024-01-02", "1900-02-28", "2000-01-01")[i % 3],
               stamps[i % len(stamps)]]
        if i % 9 < 7:  # two rows in nine have no null
            row[i % 9] = None
        rows.append(row)
    return rows


def _old_path_rows(rows: list[list], types: list[str]) -> list[resources_pb2.Row]:
    """What a window's rows were before they were encoded once: a Cell per value, built field by field."""
    built = []
    for row in rows:
        cells = []
        for kind, value in zip(types, row, strict=True):
            if value is None:
                cells.append(resources_pb2.Cell(null_value=True))
            elif kind == "timestamp":
                stamp = timestamp_pb2.Timestamp()
                stamp.FromDatetime(dt.datetime.fromisoformat(value).replace(tzinfo=dt.UTC))
                cells.append(resources_pb2.Cell(timestamp_value=stamp))
            else:
                cells.append(resources_pb2.Cell(**{_FIELDS[kind]: value}))
        built.append(resources_pb2.Row(cells=cells))
    return built


def _result(rows: list[list], resource_id: str = "res_every_type") -> PinnedResult:
    columns = [OutputColumn(f"c_{kind}", kind.title(), kind, "measure" if kind in ("integer", "decimal", "float")
                            else "attribute", f"sem.{kind}") for kind in TYPES]
    return PinnedResult(resource_id, "v1-0123456789abcdef", "0" * 64, "s", "t", columns, rows, False)


@pytest.mark.parametrize("offset,limit", [(0, 1000), (0, 1), (BLOCK_ROWS - 1, 2), (BLOCK_ROWS - 10, 300),
                                          (2 * BLOCK_ROWS, 101), (599, 10), (600, 5), (700, 5)])
@pytest.mark.parametrize("positions", [tuple(range(7)), (6,), (3, 0), (6, 5, 4, 3, 2, 1, 0), (1, 1)])
def test_encoded_windows_are_the_bytes_of_the_rows_built_the_old_way(offset, limit, positions):
    result = _result(_pinned_rows(600))
    encoded = EncodedRows()
    projected = [[row[i] for i in positions] for row in result.rows[offset:offset + limit]]
    expected = resources_pb2.ResolveWindowResponse(rows=_old_path_rows(projected, [TYPES[i] for i in positions]))
    for _ in range(2):  # encoded, then from the kept blocks
        window = encoded.window(result, positions, offset, limit)
        assert window == expected.SerializeToString()
        assert resources_pb2.ResolveWindowResponse.FromString(window) == expected


def test_blocks_are_kept_within_their_byte_bound_and_a_heavier_one_is_still_served():
    result = _result(_pinned_rows(600))
    small = EncodedRows(max_bytes=1)  # no block fits: each window encodes what it reads, nothing is kept
    assert small.window(result, (0, 1), 0, 300) == EncodedRows().window(result, (0, 1), 0, 300)
    assert len(small._blocks) == 0
    kept = EncodedRows()
    kept.window(result, (0,), 0, 1000)
    assert len(kept._blocks) == 3  # 600 rows: blocks 0, 1 and 2


def test_the_window_reply_is_the_old_message_in_full(gateway, cert_dir):
    """ResolveWindow through the servicer (in process), on every backend's gateway: its encoded reply decodes to
    the message the old path built (columns, offset, rows, total), for the whole result and a projection."""
    rows = _pinned_rows(300)
    result = _result(rows)
    pinned = gateway.store.pin("s-cells", "t-cells", result.columns, rows, False)
    token = grant(cert_dir, pinned, columns=[c.id for c in result.columns], max_rows=1000)
    for offset, limit, projection in ((0, 1000, []), (240, 20, ["c_timestamp", "c_string", "c_decimal"])):
        request = resources_pb2.ResolveWindowRequest(grant=token, offset=offset, limit=limit, column_ids=projection)
        with ThreadPoolExecutor(1) as pool:
            reply = asyncio.run(ResourceGatewayService(in_process(gateway, pool)).ResolveWindow(request, None))
        assert isinstance(reply, EncodedReply)
        positions = [[c.id for c in result.columns].index(cid) for cid in projection] or list(range(7))
        columns = [result.columns[i] for i in positions]
        expected = resources_pb2.ResolveWindowResponse(
            resource_id=pinned.resource_id, version_id=pinned.version_id, offset=offset, total_rows=len(rows),
            columns=[common_pb2.ColumnDescriptor(column_id=c.id, label=c.label, type=COLUMN_TYPES[c.type],
                                                 role=COLUMN_ROLES[c.role], semantic_id=c.semantic_id)
                     for c in columns],
            rows=_old_path_rows([[row[i] for i in positions] for row in rows[offset:offset + limit]],
                                [c.type for c in columns]))
        assert resources_pb2.ResolveWindowResponse.FromString(reply.data) == expected
        assert reply.data == expected.SerializeToString()


def _screen_cells(row: resources_pb2.Row) -> list:
    """What a screen was sent for a row before the gateway wrote rows as JSON: the host's reading of each Cell."""
    cells = []
    for cell in row.cells:
        kind = cell.WhichOneof("value")
        if kind in (None, "null_value"):
            cells.append(None)
        elif kind == "timestamp_value":
            cells.append(cell.timestamp_value.ToDatetime().isoformat(timespec="seconds"))
        else:
            cells.append(getattr(cell, kind))
    return cells


@pytest.mark.parametrize("offset,limit", [(0, 1000), (0, 1), (BLOCK_ROWS - 10, 300), (599, 10), (600, 5)])
@pytest.mark.parametrize("positions", [tuple(range(7)), (6,), (6, 5, 4, 3, 2, 1, 0), (1, 1)])
def test_json_windows_are_the_text_of_the_cells_screens_were_sent(offset, limit, positions):
    """Every type, nulls, sub-second timestamps, floats only RFC 8785's package writes (1e300): the JSON form is
    the canonical text of what the host made of the typed cells, from fresh and from kept blocks alike."""
    result = _result(_pinned_rows(600))
    encoded = EncodedRows()
    projected = [[row[i] for i in positions] for row in result.rows[offset:offset + limit]]
    expected = canonical([_screen_cells(row) for row in _old_path_rows(projected, [TYPES[i] for i in positions])])
    for _ in range(2):
        assert encoded.window(result, positions, offset, limit, form="json") == expected.encode()
    # The two forms are kept apart: a proto window after a JSON one is still the proto bytes.
    assert encoded.window(result, positions, offset, limit) == resources_pb2.ResolveWindowResponse(
        rows=_old_path_rows(projected, [TYPES[i] for i in positions])).SerializeToString()


def test_the_json_window_reply_carries_rows_json_and_no_rows(gateway, cert_dir):
    rows = _pinned_rows(300)
    result = _result(rows)
    pinned = gateway.store.pin("s-json", "t-json", result.columns, rows, False)
    token = grant(cert_dir, pinned, columns=[c.id for c in result.columns], max_rows=1000)
    request = resources_pb2.ResolveWindowRequest(grant=token, offset=290, limit=50, column_ids=["c_date", "c_float"],
                                                 rows_as_json=True)
    with ThreadPoolExecutor(1) as pool:
        reply = asyncio.run(ResourceGatewayService(in_process(gateway, pool)).ResolveWindow(request, None))
    decoded = resources_pb2.ResolveWindowResponse.FromString(reply.data)
    assert (decoded.offset, decoded.total_rows, len(decoded.rows)) == (290, 300, 0)
    assert [c.column_id for c in decoded.columns] == ["c_date", "c_float"]
    assert json.loads(decoded.rows_json) == [[row[5], row[3]] for row in rows[290:]]
