"""A window's rows on the wire: each pinned value in the Cell field of its column's type."""

from __future__ import annotations

import datetime as dt

from services.resources.server import _fill_rows
from tessera.resources.v1 import resources_pb2

TYPES = ["string", "integer", "decimal", "float", "boolean", "date", "timestamp"]


def test_every_column_type_becomes_its_own_cell_and_none_a_null():
    reply = resources_pb2.ResolveWindowResponse()
    _fill_rows(reply.rows, [["Web", 3, "1.50", 2.5, True, "2024-01-02", "2024-01-02T03:04:05"], [None] * 7], TYPES)
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
    _fill_rows(reply.rows, [[False, 0, ""]], ["boolean", "integer", "string"])
    assert [cell.WhichOneof("value") for cell in reply.rows[0].cells] == [
        "boolean_value", "integer_value", "string_value"]
