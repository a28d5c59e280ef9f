"""Analyses at their edges: drafts and calls that once leaked values, misled, or escaped as plain exceptions."""

from __future__ import annotations

import grpc
import pytest

from shared.rpc.errors import status_of
from shared.rpc.refusals import Refusal
from tests.fixtures.race import race


def _refused(session, draft) -> Refusal:
    with pytest.raises(Refusal) as error:
        session.analyze(draft) if isinstance(draft, dict) else session.gateway.analyze(
            session.session_id, session.turn_id, draft, session.capability)
    return error.value


def test_overlong_and_out_of_range_numbers(session):
    assert _refused(session, '{"mode": "aggregate", "x": ' + "9" * 5000 + "}").reason == "DRAFT_NOT_JSON"
    draft = {"mode": "aggregate", "measures": [{"id": "n", "metric": session.metric("orders", "order_count")}],
             "filter": {"field": session.field("orders", "ordered_at"), "op": "gt", "value": 10**30}}
    assert _refused(session, draft).reason in ("VALUE_TYPE", "DRAFT_SCHEMA")


def test_min_and_max_cannot_read_aggregate_only_values(session):
    draft = {"mode": "aggregate",
             "measures": [{"id": "price", "aggregation": "max", "field": session.field("products", "list_price")}],
             "dimensions": [{"id": "name", "field": session.field("products", "name")}]}
    error = _refused(session, draft)
    assert (error.reason, error.metadata["pointer"]) == ("AGGREGATION_NOT_ALLOWED", "/measures/0/aggregation")


def test_groups_without_rows_at_a_grain_count_zero(session):
    analysis = session.analyze({
        "mode": "aggregate",
        "measures": [{"id": "items", "metric": session.metric("order_items", "item_count")},
                     {"id": "returns", "metric": session.metric("returns", "return_count")},
                     {"id": "rate", "metric": session.metric("order_items", "return_rate")}],
        "dimensions": [{"id": "product", "field": session.field("products", "name")}]})
    columns = [c.id for c in analysis.result.columns]
    rows = [dict(zip(columns, row, strict=True)) for row in analysis.result.rows]
    assert rows and all(r["returns"] is not None and r["rate"] is not None for r in rows if r["items"])
    assert any(r["returns"] == 0 and r["rate"] == 0 for r in rows)


def test_filters_through_one_to_many_joins_are_refused(session):
    draft = {"mode": "aggregate",
             "measures": [{"id": "customers", "metric": session.metric("customers", "customer_count")}],
             "filter": {"not": {"field": session.field("orders", "channel"), "op": "eq", "value": "web"}}}
    error = _refused(session, draft)
    assert (status_of(error).code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "FILTER_THROUGH_FAN_OUT")


def test_the_probe_budget_holds_under_concurrency(gateway, session):

    def probe(_):
        try:
            gateway.probe(session.session_id, "race-turn", "value-domain", session.field("orders", "channel"),
                          session.capability)
            return "ok"
        except Refusal as exc:
            return exc.reason

    outcomes = race(8, probe)
    assert outcomes.count("ok") == 2 and outcomes.count("PROBE_BUDGET_EXHAUSTED") == 6


def test_a_non_ascii_token_is_invalid_not_a_crash(gateway, session):
    with pytest.raises(Refusal) as error:
        gateway.open_capability("abc.é", session.session_id)
    assert (status_of(error.value).code, error.value.reason) == (
        grpc.StatusCode.PERMISSION_DENIED, "CAPABILITY_INVALID")


RESERVED = ["at", "select", "order", "from", "group", "qualify", "pivot", "unpivot", "summarize", "limit", "user"]


def test_output_ids_that_are_reserved_words_run_on_every_backend(session):
    # Found by test_fuzz_analyze.py: DuckDB refused `ORDER BY at DESC`; output ids are the model's words, so every
    # one of them must reach SQL quoted.
    records = session.analyze({"mode": "records", "entity": session.entity("orders"),
                               "fields": [{"id": name, "field": session.field("orders", "channel")}
                                          for name in RESERVED[:4]],
                               "order_by": [{"output": "at", "direction": "desc"}]})
    assert [c.id for c in records.result.columns] == RESERVED[:4] and records.result.rows
    aggregate = session.analyze({
        "mode": "aggregate", "measures": [{"id": name, "metric": session.metric("orders", "order_count")}
                                          for name in RESERVED[4:]],
        "dimensions": [{"id": "at", "field": session.field("orders", "channel")}],
        "order_by": [{"output": "qualify", "direction": "desc"}]})
    assert [c.id for c in aggregate.result.columns] == ["at", *RESERVED[4:]] and aggregate.result.rows
