"""Analyses through the gateway equal independently computed answers, on every backend.

Expected values never come from the gateway's compiler: each test reads the
raw rows it needs with plain SQL and aggregates them in Python.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal

import pytest
import sqlalchemy as sa

from shared.rpc.refusals import Refusal


def raw_rows(engine, sql: str) -> list[tuple]:
    with engine.connect() as connection:
        return [tuple(r) for r in connection.execute(sa.text(sql))]


def as_datetime(value) -> dt.datetime:
    return dt.datetime.fromisoformat(value) if isinstance(value, str) else value


def item_revenue(quantity, unit_price, discount) -> Decimal:
    return Decimal(quantity) * Decimal(str(unit_price)) * (1 - Decimal(str(discount)))


def close(actual, expected, tolerance=Decimal("0.01")) -> bool:
    return abs(Decimal(str(actual)) - Decimal(str(expected))) <= tolerance


def by_output(analysis) -> list[dict]:
    ids = [c.id for c in analysis.result.columns]
    return [dict(zip(ids, row, strict=True)) for row in analysis.result.rows]


def test_net_revenue_by_region(session, raw_engine):
    expected = defaultdict(Decimal)
    for region, quantity, price, discount in raw_rows(raw_engine, """
            SELECT r.name, i.quantity, i.unit_price, i.discount FROM order_items i
            JOIN orders o ON o.order_id = i.order_id JOIN customers c ON c.customer_id = o.customer_id
            JOIN regions r ON r.region_id = c.region_id"""):
        expected[region] += item_revenue(quantity, price, discount)
    analysis = session.analyze({
        "mode": "aggregate", "output": "ranking",
        "measures": [{"id": "revenue", "metric": session.metric("order_items", "net_revenue")}],
        "dimensions": [{"id": "region", "field": session.field("regions", "name")}],
        "order_by": [{"output": "revenue", "direction": "desc"}]})
    rows = by_output(analysis)
    assert [r["region"] for r in rows] == sorted(expected, key=lambda k: -expected[k])
    assert all(close(r["revenue"], expected[r["region"]]) for r in rows)
    assert analysis.descriptor.row_count == len(expected) and not analysis.descriptor.truncated


def test_measures_at_different_grains_and_a_derived_metric(session, raw_engine):
    revenue, orders = defaultdict(Decimal), defaultdict(int)
    for ordered_at, quantity, price, discount in raw_rows(raw_engine, """
            SELECT o.ordered_at, i.quantity, i.unit_price, i.discount
            FROM order_items i JOIN orders o ON o.order_id = i.order_id"""):
        revenue[as_datetime(ordered_at).year] += item_revenue(quantity, price, discount)
    for (ordered_at,) in raw_rows(raw_engine, "SELECT ordered_at FROM orders"):
        orders[as_datetime(ordered_at).year] += 1
    analysis = session.analyze({
        "mode": "aggregate", "output": "series",
        "measures": [{"id": "revenue", "metric": session.metric("order_items", "net_revenue")},
                     {"id": "orders", "metric": session.metric("orders", "order_count")},
                     {"id": "aov", "metric": session.metric("orders", "average_order_value")}],
        "dimensions": [{"id": "year", "field": session.field("orders", "ordered_at"), "grain": "year"}]})
    rows = by_output(analysis)
    assert [r["year"] for r in rows] == [f"{y}-01-01T00:00:00" for y in sorted(orders)]
    assert len(rows) >= 4, "the demo data spans several years"
    for row in rows:
        year = int(row["year"][:4])
        assert row["orders"] == orders[year]
        assert close(row["revenue"], revenue[year])
        assert close(row["aov"], revenue[year] / orders[year], Decimal("0.001"))


def test_return_rate_is_a_ratio_across_grains(session, raw_engine):
    sold, returned = defaultdict(int), defaultdict(int)
    for category, quantity in raw_rows(raw_engine, """
            SELECT p.category, i.quantity FROM order_items i JOIN products p ON p.product_id = i.product_id"""):
        sold[category] += quantity
    for category, quantity in raw_rows(raw_engine, """
            SELECT p.category, r.quantity FROM returns r JOIN order_items i ON i.order_item_id = r.order_item_id
            JOIN products p ON p.product_id = i.product_id"""):
        returned[category] += quantity
    analysis = session.analyze({
        "mode": "aggregate",
        "measures": [{"id": "rate", "metric": session.metric("order_items", "return_rate")}],
        "dimensions": [{"id": "category", "field": session.field("products", "category")}]})
    rows = by_output(analysis)
    assert [r["category"] for r in rows] == sorted(sold)
    for row in rows:
        assert row["rate"] == pytest.approx(returned[row["category"]] / sold[row["category"]], rel=1e-9)


def test_fan_out_is_refused_or_counted_correctly(session, raw_engine):
    # The naive join double-counts orders that contain several items of a category.
    naive = dict(raw_rows(raw_engine, """
        SELECT p.category, count(*) FROM orders o JOIN order_items i ON i.order_id = o.order_id
        JOIN products p ON p.product_id = i.product_id GROUP BY p.category"""))
    distinct = defaultdict(set)
    for category, order_id in raw_rows(raw_engine, """
            SELECT p.category, i.order_id FROM order_items i JOIN products p ON p.product_id = i.product_id"""):
        distinct[category].add(order_id)
    assert any(naive[c] != len(distinct[c]) for c in naive), "the case must really fan out"

    with pytest.raises(Refusal) as refused:
        session.analyze({"mode": "aggregate",
                         "measures": [{"id": "orders", "metric": session.metric("orders", "order_count")}],
                         "dimensions": [{"id": "category", "field": session.field("products", "category")}]})
    assert refused.value.reason == "FAN_OUT" and refused.value.metadata["pointer"] == "/dimensions/0"

    analysis = session.analyze({
        "mode": "aggregate",
        "measures": [{"id": "orders", "aggregation": "count_distinct", "field": session.field("orders", "order_id")}],
        "dimensions": [{"id": "category", "field": session.field("products", "category")}]})
    assert {r["category"]: r["orders"] for r in by_output(analysis)} == {c: len(s) for c, s in distinct.items()}


def test_filters_and_a_quarter_grain(session, raw_engine):
    expected = defaultdict(int)
    start = dt.datetime(2024, 1, 1)
    for ordered_at, channel in raw_rows(raw_engine, "SELECT ordered_at, channel FROM orders"):
        moment = as_datetime(ordered_at)
        if channel in ("web", "store") and moment >= start:
            expected[dt.datetime(moment.year, 3 * ((moment.month - 1) // 3) + 1, 1).isoformat()] += 1
    analysis = session.analyze({
        "mode": "aggregate", "output": "series",
        "measures": [{"id": "orders", "metric": session.metric("orders", "order_count")}],
        "dimensions": [{"id": "quarter", "field": session.field("orders", "ordered_at"), "grain": "quarter"}],
        "filter": {"all": [{"field": session.field("orders", "channel"), "op": "in", "values": ["web", "store"]},
                           {"field": session.field("orders", "ordered_at"), "op": "gte", "value": "2024-01-01"}]}})
    assert {r["quarter"]: r["orders"] for r in by_output(analysis)} == dict(expected)


@pytest.mark.parametrize("grain", ["hour", "day", "week", "month"])
def test_time_grains_agree_with_python(session, raw_engine, grain):
    def bucket(moment: dt.datetime) -> str:
        if grain == "hour":
            value = moment.replace(minute=0, second=0, microsecond=0)
        elif grain == "day":
            value = moment.replace(hour=0, minute=0, second=0, microsecond=0)
        elif grain == "week":
            day = moment.date() - dt.timedelta(days=moment.weekday())
            value = dt.datetime.combine(day, dt.time())
        else:
            value = dt.datetime(moment.year, moment.month, 1)
        return value.isoformat()

    expected = defaultdict(int)
    for (ordered_at,) in raw_rows(raw_engine, "SELECT ordered_at FROM orders"):
        moment = as_datetime(ordered_at)
        if dt.datetime(2023, 3, 1) <= moment < dt.datetime(2023, 3, 15):
            expected[bucket(moment)] += 1
    analysis = session.analyze({
        "mode": "aggregate",
        "measures": [{"id": "orders", "metric": session.metric("orders", "order_count")}],
        "dimensions": [{"id": "bucket", "field": session.field("orders", "ordered_at"), "grain": grain}],
        "filter": {"field": session.field("orders", "ordered_at"), "op": "between",
                   "values": ["2023-03-01T00:00:00", "2023-03-14T23:59:59"]}})
    assert {r["bucket"]: r["orders"] for r in by_output(analysis)} == dict(expected)


def test_records_are_capped_by_policy_and_say_so(session, raw_engine):
    cap = session.gateway.settings.row_cap
    total = raw_rows(raw_engine, "SELECT count(*) FROM orders")[0][0]
    assert total > cap
    analysis = session.analyze({
        "mode": "records", "entity": session.entity("orders"),
        "fields": [{"id": "when", "field": session.field("orders", "ordered_at")},
                   {"id": "channel", "field": session.field("orders", "channel")},
                   {"id": "segment", "field": session.field("customers", "segment")}],
        "order_by": [{"output": "when", "direction": "desc"}]})
    assert analysis.descriptor.truncated and analysis.descriptor.row_count == cap
    latest = sorted((as_datetime(v) for (v,) in raw_rows(raw_engine, "SELECT ordered_at FROM orders")),
                    reverse=True)[:cap]
    assert [r["when"] for r in by_output(analysis)] == [v.isoformat(timespec="seconds") for v in latest]


def test_sql_in_values_is_only_ever_a_value(session, raw_engine):
    hostile = "x'); DROP TABLE orders; --"
    analysis = session.analyze({
        "mode": "aggregate", "output": "scalar",
        "measures": [{"id": "orders", "metric": session.metric("orders", "order_count")}],
        "filter": {"any": [{"field": session.field("orders", "channel"), "op": "eq", "value": hostile},
                           {"field": session.field("orders", "channel"), "op": "contains", "value": "%"}]}})
    assert by_output(analysis) == [{"orders": 0}]
    assert raw_rows(raw_engine, "SELECT count(*) FROM orders")[0][0] > 0


def test_results_are_pinned_and_deterministic(session):
    draft = {"mode": "aggregate",
             "measures": [{"id": "units", "metric": session.metric("order_items", "units_sold")}],
             "dimensions": [{"id": "channel", "field": session.field("orders", "channel")}]}
    first, second = session.analyze(draft), session.analyze(draft)
    assert first.result.resource_id != second.result.resource_id
    assert first.result.content_hash == second.result.content_hash
    stored = session.gateway.store.get(first.result.resource_id)
    assert stored.rows == first.result.rows and stored.version_id == first.result.version_id
    assert first.evidence.catalog_fingerprint == session.gateway.catalog.fingerprint
    assert first.evidence.row_count == len(first.result.rows) and len(first.evidence.query_fingerprint) == 64
