"""A draft field of the wrong JSON type is INVALID_ARGUMENT/DRAFT_SCHEMA naming its JSON path (issue #13).

Regression: a `mode` that was a list or an object reached the per-mode dispatch as a dict key and
raised TypeError, which the servicer turned into INTERNAL.
"""

from __future__ import annotations

import json

import grpc
import pytest

from shared.rpc.errors import status_of
from shared.rpc.refusals import Refusal
from tests.resources.conftest import Session


def _base(s: Session) -> dict:
    return {"mode": "aggregate", "measures": [{"id": "revenue", "metric": s.metric("order_items", "net_revenue")}],
            "dimensions": [{"id": "month", "field": s.field("orders", "ordered_at"), "grain": "month"}],
            "filter": {"field": s.field("orders", "channel"), "op": "in", "values": ["web"]},
            "order_by": [{"output": "revenue", "direction": "desc"}], "output": "table"}


def _records(s: Session) -> dict:
    return {"mode": "records", "entity": s.entity("orders"), "fields": [{"id": "c", "field": s.field(
        "orders", "channel")}], "order_by": [{"output": "c"}]}


# (name, draft maker, JSON path, the message's start, expected type, actual type)
WRONG_TYPES = [
    ("mode as list", lambda s: {**_base(s), "mode": ["aggregate"]}, "$.mode", "/mode", "string", "array"),
    ("mode as object", lambda s: {**_base(s), "mode": {"aggregate": True}}, "$.mode", "/mode", "string", "object"),
    ("mode as number", lambda s: {**_base(s), "mode": 1}, "$.mode", "/mode", "string", "number"),
    ("mode as null", lambda s: {**_base(s), "mode": None}, "$.mode", "/mode", "string", "null"),
    ("mode as boolean", lambda s: {**_base(s), "mode": True}, "$.mode", "/mode", "string", "boolean"),
    ("mode as list on records", lambda s: {**_records(s), "mode": ["records"]}, "$.mode", "/mode", "string",
     "array"),
    ("draft as list", lambda s: [_base(s)], "$", "", "object", "array"),
    ("measures as object", lambda s: {**_base(s), "measures": {"id": "x"}}, "$.measures", "/measures", "array",
     "object"),
    ("measure as string", lambda s: {**_base(s), "measures": ["revenue"]}, "$.measures[0]", "/measures/0",
     "object", "string"),
    ("measure id as number", lambda s: {**_base(s), "measures": [{"id": 7, "metric": s.metric(
        "order_items", "net_revenue")}]}, "$.measures[0].id", "/measures/0/id", "string", "number"),
    ("dimensions as string", lambda s: {**_base(s), "dimensions": "month"}, "$.dimensions", "/dimensions", "array",
     "string"),
    ("order_by as object", lambda s: {**_base(s), "order_by": {"output": "revenue"}}, "$.order_by", "/order_by",
     "array", "object"),
    ("order output as list", lambda s: {**_base(s), "order_by": [{"output": ["revenue"]}]},
     "$.order_by[0].output", "/order_by/0/output", "string", "array"),
    ("records entity as object", lambda s: {**_records(s), "entity": {"id": s.entity("orders")}}, "$.entity",
     "/entity", "string", "object"),
    ("records fields as string", lambda s: {**_records(s), "fields": "c"}, "$.fields", "/fields", "array",
     "string"),
]


def _refused(gateway, draft) -> Refusal:
    s = Session(gateway)
    with pytest.raises(Refusal) as refused:
        gateway.analyze(s.session_id, s.turn_id, json.dumps(draft), s.capability)
    return refused.value


@pytest.mark.parametrize(("make", "json_path", "pointer", "expected", "got"), [case[1:] for case in WRONG_TYPES],
                         ids=[case[0] for case in WRONG_TYPES])
def test_a_field_of_the_wrong_type_is_refused_with_its_path(gateway, statements, make,
                                                            json_path, pointer, expected, got):
    error = _refused(gateway, make(Session(gateway)))
    assert (status_of(error).code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "DRAFT_SCHEMA")
    article = "an" if expected[0] in "aeio" else "a"
    assert error.message.startswith(f"{json_path} must be {article} {expected}, got {got}"), error.message
    assert (error.metadata["pointer"], error.metadata["keyword"]) == (pointer, "type")
    assert json.loads(error.metadata["allowed"]) == [expected] and error.metadata["next_step"]
    assert statements == []


@pytest.mark.parametrize(("value", "got"), [({"web": 1}, "object"), ([["web"]], "array"), (None, "null")])
def test_a_filter_value_of_the_wrong_type_is_refused(gateway, value, got):
    s = Session(gateway)
    draft = {**_base(s), "filter": {"field": s.field("orders", "channel"), "op": "eq", "value": value}}
    error = _refused(gateway, draft)
    assert (status_of(error).code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "DRAFT_SCHEMA")
    assert error.metadata["pointer"].startswith("/filter"), error


def test_a_wrong_mode_string_and_a_missing_member_name_their_path(gateway):
    s = Session(gateway)
    wrong = _refused(gateway, {**_base(s), "mode": "sql"})
    assert (wrong.reason, wrong.metadata["pointer"]) == ("DRAFT_SCHEMA", "/mode")
    assert wrong.message.startswith("$.mode must be 'aggregate' or 'records'")
    records = _records(s)
    del records["order_by"]
    missing = _refused(gateway, records)
    assert (missing.reason, missing.metadata["pointer"], missing.metadata["keyword"]) == (
        "DRAFT_SCHEMA", "/order_by", "required")
    assert missing.message.startswith("$.order_by is required")


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
def test_a_time_that_leaves_the_calendar_in_utc_is_a_value_error(gateway, moment):
    s = Session(gateway)
    draft = {**_base(s), "filter": {"field": s.field("orders", "ordered_at"), "op": "gte", "value": moment}}
    error = _refused(gateway, draft)
    assert (status_of(error).code, error.reason, error.metadata["pointer"]) == (
        grpc.StatusCode.INVALID_ARGUMENT, "VALUE_TYPE", "/filter/value")
