"""Bad drafts, ids out of scope, changed catalogs, writes and slow queries are refused precisely."""

from __future__ import annotations

import json

import grpc
import pytest
import sqlalchemy as sa

from services.resources.warehouse import Warehouse
from shared.rpc.errors import status_of
from shared.rpc.refusals import Refusal
from tests.resources.conftest import Session, make_gateway


def _bad_drafts(s: Session):
    revenue = {"id": "revenue", "metric": s.metric("order_items", "net_revenue")}
    channel = s.field("orders", "channel")
    quantity = s.field("order_items", "quantity")
    deep = {"field": channel, "op": "eq", "value": "web"}
    for _ in range(9):
        deep = {"not": deep}
    return [
        ("not json", "{", "DRAFT_NOT_JSON", ""),
        ("duplicate key", '{"mode": "aggregate", "mode": "records"}', "DRAFT_NOT_JSON", ""),
        ("NaN", '{"mode": "aggregate", "measures": [{"id": "a", "metric": NaN}]}', "DRAFT_NOT_JSON", ""),
        ("no mode", {"measures": [revenue]}, "DRAFT_SCHEMA", "/mode"),
        ("empty measures", {"mode": "aggregate", "measures": []}, "DRAFT_SCHEMA", "/measures"),
        ("17 measures", {"mode": "aggregate", "measures": [{**revenue, "id": f"m{i}"} for i in range(17)]},
         "DRAFT_SCHEMA", "/measures"),
        ("limit without an order", {"mode": "aggregate", "measures": [revenue], "limit": 10},
         "DRAFT_SCHEMA", "/order_by"),
        ("limit over the schema's bound", {"mode": "aggregate", "measures": [revenue], "limit": 20_001,
                                           "order_by": [{"output": "revenue"}]}, "DRAFT_SCHEMA", "/limit"),
        ("limit over the row cap", {"mode": "aggregate", "measures": [revenue], "limit": 1_001,
                                    "order_by": [{"output": "revenue"}]}, "LIMIT_OVER_CAP", "/limit"),
        ("having on a dimension", {"mode": "aggregate", "measures": [revenue],
                                   "dimensions": [{"id": "channel", "field": channel}],
                                   "having": {"output": "channel", "op": "gt", "value": 1}},
         "UNKNOWN_OUTPUT", "/having/output"),
        ("having with text", {"mode": "aggregate", "measures": [revenue],
                              "having": {"output": "revenue", "op": "gt", "value": "1"}}, "DRAFT_SCHEMA",
         "/having/value"),
        ("share of a dimension", {"mode": "aggregate", "measures": [revenue],
                                  "dimensions": [{"id": "channel", "field": channel}],
                                  "calculations": [{"id": "share", "kind": "share_of_total", "of": "channel"}]},
         "UNKNOWN_OUTPUT", "/calculations/0/of"),
        ("rank within a measure", {"mode": "aggregate", "measures": [revenue],
                                   "dimensions": [{"id": "channel", "field": channel}],
                                   "calculations": [{"id": "r", "kind": "rank", "of": "revenue",
                                                     "within": ["revenue"]}]},
         "UNKNOWN_OUTPUT", "/calculations/0/within/0"),
        ("calculation id reused", {"mode": "aggregate", "measures": [revenue],
                                   "calculations": [{"id": "revenue", "kind": "rank", "of": "revenue"}]},
         "DUPLICATE_OUTPUT", "/calculations/0/id"),
        ("NUL in a text value", {"mode": "aggregate", "measures": [revenue],
                                 "filter": {"field": channel, "op": "eq", "value": "we\u0000b"}},
         "DRAFT_SCHEMA", "/filter/value"),
        ("via names a field", {"mode": "aggregate", "measures": [revenue],
                               "dimensions": [{"id": "channel", "field": channel, "via": [channel]}]},
         "DRAFT_SCHEMA", "/dimensions/0/via/0"),
        ("via off the path", {"mode": "aggregate", "measures": [revenue],
                              "dimensions": [{"id": "channel", "field": channel,
                                              "via": [s.relationship("return_item")]}]},
         "ROLE_NOT_ON_PATH", "/dimensions/0/via"),
        ("sql text", {"mode": "aggregate", "measures": [revenue], "sql": "SELECT 1"}, "DRAFT_SCHEMA", "/sql"),
        ("physical name", {"mode": "aggregate", "measures": [{"id": "x", "aggregation": "sum",
                                                               "field": "order_items.quantity"}]},
         "DRAFT_SCHEMA", "/measures/0/field"),
        ("unknown id", {"mode": "aggregate", "measures": [{"id": "x", "metric": "met_aaaaaaaaaaaa"}]},
         "UNKNOWN_ID", "/measures/0/metric"),
        ("wrong kind", {"mode": "aggregate", "measures": [{"id": "x", "metric": s.metric("orders", "order_count")}],
                        "dimensions": [{"id": "d", "field": s.metric("orders", "order_count")}]},
         "DRAFT_SCHEMA", "/dimensions/0/field"),
        ("field id as metric", {"mode": "aggregate", "measures": [{"id": "x", "metric": channel.replace("fld_",
                                                                                                       "met_")}]},
         "UNKNOWN_ID", "/measures/0/metric"),
        ("aggregate-only as dimension", {"mode": "aggregate", "measures": [revenue],
                                         "dimensions": [{"id": "q", "field": quantity}]},
         "FIELD_NOT_EXPOSED", "/dimensions/0/field"),
        ("never-to-model field", {"mode": "aggregate", "measures": [{"id": "n", "aggregation": "count_distinct",
                                                                     "field": s.field("customers", "email")}]},
         "UNKNOWN_ID", "/measures/0/field"),
        ("sum of text", {"mode": "aggregate", "measures": [{"id": "x", "aggregation": "sum", "field": channel}]},
         "AGGREGATION_TYPE", "/measures/0/aggregation"),
        ("operator type", {"mode": "aggregate", "measures": [revenue],
                           "filter": {"field": channel, "op": "gt", "value": "web"}}, "OPERATOR_TYPE", "/filter/op"),
        ("value type", {"mode": "aggregate", "measures": [revenue],
                        "filter": {"field": s.field("orders", "ordered_at"), "op": "gte", "value": 2024}},
         "VALUE_TYPE", "/filter/value"),
        ("bad date", {"mode": "aggregate", "measures": [revenue],
                      "filter": {"field": s.field("orders", "ordered_at"), "op": "gte", "value": "last year"}},
         "VALUE_TYPE", "/filter/value"),
        ("malformed predicate", {"mode": "aggregate", "measures": [revenue],
                                 "filter": {"all": [{"field": channel}]}}, "DRAFT_SCHEMA", "/filter/all/0"),
        ("predicate too deep", {"mode": "aggregate", "measures": [revenue], "filter": deep},
         "PREDICATE_TOO_DEEP", None),
        ("over-long string", {"mode": "aggregate", "measures": [revenue],
                              "filter": {"field": channel, "op": "eq", "value": "w" * 201}}, "DRAFT_SCHEMA",
         "/filter/value"),
        ("timestamp without grain", {"mode": "aggregate", "measures": [revenue],
                                     "dimensions": [{"id": "t", "field": s.field("orders", "ordered_at")}]},
         "GRAIN_REQUIRED", "/dimensions/0"),
        ("grain on text", {"mode": "aggregate", "measures": [revenue],
                           "dimensions": [{"id": "c", "field": channel, "grain": "month"}]},
         "GRAIN_NOT_TEMPORAL", "/dimensions/0/grain"),
        ("order by unknown output", {"mode": "aggregate", "measures": [revenue],
                                     "order_by": [{"output": "nope"}]}, "UNKNOWN_OUTPUT", "/order_by/0/output"),
        ("records without order", {"mode": "records", "entity": s.entity("orders"),
                                   "fields": [{"id": "c", "field": channel}]}, "DRAFT_SCHEMA", "/order_by"),
        ("too big", {"mode": "aggregate", "measures": [revenue], "x": "y" * 70_000}, "DRAFT_TOO_LARGE", ""),
    ]


def test_bad_drafts_are_refused_with_a_reason_and_a_path_before_any_query(gateway, statements):
    s = Session(gateway)
    for name, draft, reason, path in _bad_drafts(s):
        text = draft if isinstance(draft, str) else json.dumps(draft)
        with pytest.raises(Refusal) as refused:
            gateway.analyze(s.session_id, s.turn_id, text, s.capability)
        error = refused.value
        assert status_of(error).code == grpc.StatusCode.INVALID_ARGUMENT, name
        assert error.reason == reason, (name, error)
        if path is not None:
            assert error.metadata["pointer"] == path, (name, error)
    assert statements == [], "an invalid draft must never reach the warehouse"


def test_ids_outside_the_capability_are_refused(gateway, statements):
    s = Session(gateway)
    found, token = gateway.inspect("net revenue by region", s.empty)
    seen = gateway.open_capability(token, s.session_id)
    assert s.metric("order_items", "net_revenue") in seen.ids
    ticket_count = s.metric("support_tickets", "ticket_count")
    assert ticket_count not in seen.ids
    draft = json.dumps({"mode": "aggregate", "measures": [{"id": "n", "metric": ticket_count}]})
    with pytest.raises(Refusal) as refused:
        gateway.analyze(s.session_id, s.turn_id, draft, seen)
    assert (status_of(refused.value).code, refused.value.reason) == (
        grpc.StatusCode.PERMISSION_DENIED, "ID_NOT_IN_SCOPE")
    assert refused.value.metadata["pointer"] == "/measures/0/metric"
    with pytest.raises(Refusal) as other_session:
        gateway.open_capability(token, "someone-else")
    assert other_session.value.reason == "CAPABILITY_INVALID"
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    with pytest.raises(Refusal) as tampered:
        gateway.open_capability(forged, s.session_id)
    assert tampered.value.reason == "CAPABILITY_INVALID"
    assert statements == []


def test_inspect_is_budgeted_deterministic_and_empty_when_nothing_matches(gateway):
    s = Session(gateway)
    first, _ = gateway.inspect("return rate by product category", s.empty)
    again, _ = gateway.inspect("return rate by product category", s.empty)
    assert [e.id for e, _, _ in first] == [e.id for e, _, _ in again]
    names = {e.name for e, _, _ in first}
    assert {"order_items", "returns", "products"} <= names  # both sides of the ratio, and the join path
    assert len(first) <= 12 and all(len(f) <= 40 and len(m) <= 24 for _, f, m in first)
    nothing, token = gateway.inspect("weather forecast for tomorrow", s.empty)
    assert nothing == [] and gateway.open_capability(token, s.session_id).ids == frozenset()


def test_a_changed_catalog_invalidates_old_tokens(gateway, warehouse, cert_dir, tmp_path):
    s = Session(gateway)
    _, token = gateway.inspect("net revenue", s.empty)
    changed = tmp_path / "model.yaml"
    text = gateway.settings.semantic_model.read_text()
    changed.write_text(text.replace("label: Net revenue", "label: Net sales revenue"))
    other = make_gateway(warehouse, cert_dir, tmp_path, semantic_model=changed)
    try:
        assert other.catalog.fingerprint != gateway.catalog.fingerprint
        assert other.catalog.entities["orders"].id != gateway.catalog.entities["orders"].id
        with pytest.raises(Refusal) as stale:
            other.open_capability(token, s.session_id)
        assert (status_of(stale.value).code, stale.value.reason) == (
            grpc.StatusCode.FAILED_PRECONDITION, "CATALOG_CHANGED")
    finally:
        other.close()


def test_the_gateway_connection_cannot_write(gateway):
    with pytest.raises(sa.exc.DBAPIError):
        with gateway.warehouse.engine.begin() as connection:
            connection.execute(sa.text("INSERT INTO regions (region_id, name, country) VALUES (999, 'x', 'y')"))
    with pytest.raises(sa.exc.DBAPIError):
        with gateway.warehouse.engine.begin() as connection:
            connection.execute(sa.text("DELETE FROM orders"))


def test_the_postgres_reader_role_cannot_write_even_when_asking_to(warehouse):
    if not warehouse.startswith("postgresql"):
        pytest.skip("roles are a PostgreSQL concept; SQLite and DuckDB open the file read-only")
    engine = sa.create_engine(warehouse)  # the role alone, without the gateway's transaction settings
    try:
        with pytest.raises(sa.exc.DBAPIError, match="permission denied"):
            with engine.begin() as connection:
                connection.execute(sa.text("SET TRANSACTION READ WRITE"))
                connection.execute(sa.text("UPDATE orders SET status = 'x'"))
    finally:
        engine.dispose()


SLOW = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500000000) "
              "SELECT count(*) FROM c",
    "duckdb": "SELECT count(*) FROM range(100000000000) a",
    "postgresql": "SELECT pg_sleep(5)",
}


def test_slow_queries_stop_at_the_policy_timeout(warehouse):
    slow = Warehouse(warehouse, statement_timeout_seconds=0.3)
    try:
        with pytest.raises(Refusal) as stopped:
            slow.fetch(sa.text(SLOW[slow.dialect]), 1)
        assert (status_of(stopped.value).code, stopped.value.reason) == (
            grpc.StatusCode.DEADLINE_EXCEEDED, "QUERY_TIMEOUT")
        taught = stopped.value.metadata
        assert taught["bound"] == "0.3" and taught["next_step"].startswith("Call run_analysis again asking for less")
        rows, _ = slow.fetch(sa.select(sa.literal(1)), 1)  # the connection is usable afterwards
        assert rows == [(1,)]
    finally:
        slow.close()
