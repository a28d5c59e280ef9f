"""One statement per analysis (issue 42): the rows, their time span and their count before the cap come from
the statement that computes the answer, on every backend.

The span and the count are checked twice: against plain SQL written here, and against what the separate
queries the gateway used to send (a min/max over the filter, a count over the statement without its limit)
give for the same draft, caption for caption. None of these drafts has a relative period: a period's reference
date is looked up (and kept) on its own, and is no part of an analysis's statement.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sqlite3
from dataclasses import replace

import pytest
import sqlalchemy as sa

from services.resources.draft import with_periods
from services.resources.interpretation import interpret, readable_day
from services.resources.results import content_hash, normalize_rows
from tests.resources.conftest import Session, make_gateway, recorded_statements

SINCE = "2023-01-01"


def selects(statements: list[str]) -> list[str]:
    """The queries among the statements sent (PostgreSQL's engine also sends SET TRANSACTION READ ONLY)."""
    return [text for text in statements if text.lstrip().upper().startswith(("SELECT", "WITH"))]


def scalar_row(engine: sa.Engine, sql: str, **values) -> tuple:
    with engine.connect() as connection:
        return tuple(connection.execute(sa.text(sql), values).one())


def day(value) -> str:
    return readable_day(dt.datetime.fromisoformat(value) if isinstance(value, str) else value)


def regions(raw_engine) -> list[str]:
    with raw_engine.connect() as connection:
        names = connection.execute(sa.text("SELECT name FROM regions ORDER BY name")).scalars().all()
    return names[:2]


def units(session: Session) -> dict:
    return {"id": "units", "metric": session.metric("order_items", "units_sold")}


def through_customer(session: Session, names: list[str]) -> dict:
    """A filter that reaches the orders (and their time) through a join from the order items, and a region
    two joins further on."""
    return {"all": [{"field": session.field("regions", "name"), "op": "in", "values": names},
                    {"field": session.field("orders", "ordered_at"), "op": "gte", "value": SINCE}]}


ORDERS_IN_REGIONS = """
    FROM orders o JOIN customers c ON c.customer_id = o.customer_id JOIN regions r ON r.region_id = c.region_id
    WHERE r.name IN (:a, :b) AND o.ordered_at >= :since"""


def separately(gateway, draft: dict, capability):
    """What the gateway computed before issue 42: the answer's own statement, then a count over it without its
    limit when some were left out, and the span over the filter as a statement of its own."""
    checked = gateway.check_draft(json.dumps(draft), capability)
    checked = replace(checked, filter=with_periods(checked.filter, gateway._resolve_period))
    plan = gateway.queries.plan(checked, gateway.settings.row_cap, carry=False)
    rows, _ = gateway.warehouse.fetch(plan.statement, plan.row_cap + 1)
    truncated = len(rows) > plan.row_cap
    rows = normalize_rows(rows[:plan.row_cap], [c.type for c in plan.columns])
    total = None
    if truncated or (plan.limited and len(rows) == plan.row_cap):
        counting = sa.select(sa.func.count()).select_from(plan.statement.limit(None).order_by(None).subquery())
        total = int(gateway.warehouse.fetch(counting, 1)[0][0][0])
    caption = interpret(checked, plan.columns, row_count=len(rows), truncated=truncated, total_rows=total,
                        coverage=gateway._coverage(checked), limited=plan.limited)
    return content_hash(plan.columns, rows), truncated, caption


def drafts(session: Session, names: list[str]) -> dict[str, dict]:
    """Drafts down every path of the planner: one grain and several, calculations, having, top-N, listings."""
    revenue = {"id": "revenue", "metric": session.metric("order_items", "net_revenue")}
    orders = {"id": "orders", "metric": session.metric("orders", "order_count")}
    region = {"id": "region", "field": session.field("regions", "name")}
    product = {"id": "product", "field": session.field("products", "name")}
    month = {"id": "month", "field": session.field("orders", "ordered_at"), "grain": "month"}
    return {
        "scalar": {"mode": "aggregate", "output": "scalar", "measures": [orders]},
        "by region through joins": {"mode": "aggregate", "measures": [revenue], "dimensions": [region],
                                    "filter": through_customer(session, names)},
        "two grains": {"mode": "aggregate", "measures": [revenue, orders], "dimensions": [region]},
        "derived": {"mode": "aggregate", "measures": [
            {"id": "aov", "metric": session.metric("orders", "average_order_value")}], "dimensions": [region]},
        "top products": {"mode": "aggregate", "output": "ranking", "measures": [units(session)],
                         "dimensions": [product], "order_by": [{"output": "units", "direction": "desc"}],
                         "limit": 3},
        "top with having": {"mode": "aggregate", "measures": [units(session)], "dimensions": [product],
                            "having": {"output": "units", "op": "gte", "value": 40},
                            "order_by": [{"output": "units", "direction": "desc"}], "limit": 3},
        "calculations and having": {
            "mode": "aggregate", "measures": [revenue, orders], "dimensions": [region],
            "calculations": [{"id": "share", "kind": "share_of_total", "of": "revenue"},
                             {"id": "place", "kind": "rank", "of": "revenue"}],
            "having": {"output": "orders", "op": "gte", "value": 1}},
        "prior period": {
            "mode": "aggregate", "measures": [orders], "dimensions": [month],
            "calculations": [{"id": "before", "kind": "prior", "of": "orders", "time": "month",
                              "against": "previous_period"}],
            "filter": {"field": session.field("orders", "ordered_at"), "op": "gte", "value": SINCE}},
        "months over the cap": {"mode": "aggregate", "measures": [units(session)],
                                "dimensions": [product, month]},
        "listing over the cap": {"mode": "records", "entity": session.entity("order_items"),
                                 "fields": [{"id": "product", "field": session.field("products", "name")},
                                            {"id": "category", "field": session.field("products", "category")}],
                                 "order_by": [{"output": "category"}]},
        "top listing": {"mode": "records", "entity": session.entity("orders"),
                        "fields": [{"id": "channel", "field": session.field("orders", "channel")},
                                   {"id": "at", "field": session.field("orders", "ordered_at")}],
                        "filter": through_customer(session, names),
                        "order_by": [{"output": "at", "direction": "desc"}], "limit": 20},
        "unreachable span": {"mode": "aggregate", "measures": [revenue], "dimensions": [region],
                             "filter": {"field": session.field("products", "category"), "op": "eq",
                                        "value": "nothing sold is called this"}},
    }


CASES = ["scalar", "by region through joins", "two grains", "derived", "top products", "top with having",
         "calculations and having", "prior period", "months over the cap", "listing over the cap", "top listing",
         "unreachable span"]


@pytest.mark.parametrize("case", CASES)
def test_one_statement_answers_as_the_separate_queries_did(session, raw_engine, statements, case):
    """The same rows, hash, truncation and caption (span and count included) as the answer, the count and the
    span asked apart; and the warehouse is sent one statement."""
    draft = drafts(session, regions(raw_engine))[case]
    expected_hash, expected_truncated, expected_caption = separately(session.gateway, draft, session.capability)
    statements.clear()
    analysis = session.analyze(draft)
    assert selects(statements) == [selects(statements)[0]], selects(statements)
    assert analysis.descriptor.content_hash == expected_hash
    assert analysis.descriptor.truncated == expected_truncated
    assert analysis.interpretation == expected_caption


def test_a_complete_answer_dates_its_rows_through_the_join(session, raw_engine, statements):
    """Order items are dated by their order: the span is that of the orders the filter reached (through the
    customer and the region), in one statement with no count."""
    names = regions(raw_engine)
    analysis = session.analyze(drafts(session, names)["by region through joins"])
    first, last = scalar_row(raw_engine, f"SELECT min(o.ordered_at), max(o.ordered_at) {ORDERS_IN_REGIONS}",
                             a=names[0], b=names[1], since=SINCE)
    assert analysis.interpretation.coverage == f"Order time {day(first)} – {day(last)}"
    assert analysis.descriptor.row_count == 2 and analysis.interpretation.truncation == ""
    assert len(selects(statements)) == 1


def test_a_top_n_after_having_counts_the_groups_having_kept(session, raw_engine, statements):
    """"top 3 of N": N is the products passing having (before the limit), the span every item the filter
    reached (before having), both from the one statement."""
    analysis = session.analyze(drafts(session, [])["top with having"])
    (passing,) = scalar_row(raw_engine, "SELECT count(*) FROM (SELECT p.name FROM order_items i JOIN products p "
                                        "ON p.product_id = i.product_id GROUP BY p.name "
                                        "HAVING sum(i.quantity) >= 40) kept")
    (products,) = scalar_row(raw_engine, "SELECT count(DISTINCT p.name) FROM order_items i "
                                         "JOIN products p ON p.product_id = i.product_id")
    assert 3 < passing < products, "having should keep some products, and more than the top 3"
    assert analysis.interpretation.truncation == f"top 3 of {passing:,}"
    first, last = scalar_row(raw_engine, "SELECT min(ordered_at), max(ordered_at) FROM orders")
    assert analysis.interpretation.coverage == f"Order time {day(first)} – {day(last)}"
    assert len(selects(statements)) == 1


def test_a_listing_over_the_cap_counts_every_row_and_dates_them(session, raw_engine, statements):
    """Order items listed by product, filtered on their order's time: the count is every item the filter kept
    (not the 1,000 shown), the span that of their orders (joined for it: no field listed is the order's)."""
    draft = {"mode": "records", "entity": session.entity("order_items"),
             "fields": [{"id": "product", "field": session.field("products", "name")}],
             "filter": {"field": session.field("orders", "ordered_at"), "op": "gte", "value": SINCE},
             "order_by": [{"output": "product"}]}
    analysis = session.analyze(draft)
    (items,) = scalar_row(raw_engine, "SELECT count(*) FROM order_items i JOIN orders o ON o.order_id = i.order_id "
                                      "WHERE o.ordered_at >= :since", since=SINCE)
    first, last = scalar_row(raw_engine, "SELECT min(ordered_at), max(ordered_at) FROM orders "
                                         "WHERE ordered_at >= :since", since=SINCE)
    assert items > 1_000 and analysis.descriptor.truncated
    assert analysis.interpretation.truncation == f"first 1,000 rows of {items:,}"
    assert analysis.interpretation.coverage == f"Order time {day(first)} – {day(last)}"
    assert len(selects(statements)) == 1


def test_a_span_the_filter_cannot_reach_is_dropped_and_the_answer_stands(session, raw_engine, statements):
    """Products are reached from the orders only through the many items of each: the orders' span over
    "items of a category" was never stated; the statement carries none, and the answer is the same."""
    category = scalar_row(raw_engine, "SELECT min(category) FROM products")[0]
    analysis = session.analyze({"mode": "aggregate", "output": "scalar", "measures": [units(session)],
                                "filter": {"field": session.field("products", "category"), "op": "eq",
                                           "value": category}})
    (expected,) = scalar_row(raw_engine, "SELECT sum(i.quantity) FROM order_items i JOIN products p "
                                         "ON p.product_id = i.product_id WHERE p.category = :c", c=category)
    assert analysis.result.rows == [[int(expected)]]
    assert analysis.interpretation.coverage == "" and "Order time" not in analysis.interpretation.text
    assert len(selects(statements)) == 1


def test_no_rows_say_no_span_in_the_one_statement(session, statements):
    analysis = session.analyze({"mode": "aggregate", "measures": [units(session)],
                                "dimensions": [{"id": "product", "field": session.field("products", "name")}],
                                "filter": {"field": session.field("orders", "ordered_at"), "op": "lt",
                                           "value": "1900-01-01"}})
    assert analysis.result.rows == [] and analysis.interpretation.coverage == "no order time in the rows used"
    assert len(selects(statements)) == 1


def test_having_that_keeps_no_group_asks_the_span_apart(session, raw_engine, statements):
    """Having dropped every row, and the span with them: the one case that still sends a second statement,
    so the caption states the span of the rows the filter reached, as it always has."""
    analysis = session.analyze({"mode": "aggregate", "measures": [units(session)],
                                "dimensions": [{"id": "product", "field": session.field("products", "name")}],
                                "having": {"output": "units", "op": "gt", "value": 10 ** 9}})
    first, last = scalar_row(raw_engine, "SELECT min(ordered_at), max(ordered_at) FROM orders")
    assert analysis.result.rows == []
    assert analysis.interpretation.coverage == f"Order time {day(first)} – {day(last)}"
    assert len(selects(statements)) == 2


def test_a_value_that_is_no_date_drops_the_span_not_the_answer(seeded, cert_dir, tmp_path):
    """SQLite keeps whatever text a date column is given: the span's latest value is then no date. The answer
    and its count stand; no span is stated."""
    if not seeded.startswith("sqlite"):
        pytest.skip("only SQLite stores text that is no date in a date column")
    copy = tmp_path / "warehouse.sqlite"
    shutil.copy(sa.make_url(seeded).database, copy)
    with sqlite3.connect(copy) as connection:
        connection.execute("UPDATE orders SET ordered_at = 'not a date' WHERE order_id = (SELECT max(order_id) "
                           "FROM orders)")
        expected = dict(connection.execute("SELECT channel, count(*) FROM orders GROUP BY channel").fetchall())
    gateway = make_gateway(f"sqlite:///{copy}", cert_dir, tmp_path)
    try:
        session = Session(gateway)
        sent = recorded_statements(gateway.warehouse.engine)
        statements = next(sent)
        analysis = session.analyze({"mode": "aggregate", "measures": [
            {"id": "orders", "metric": session.metric("orders", "order_count")}],
            "dimensions": [{"id": "channel", "field": session.field("orders", "channel")}]})
        assert {channel: count for channel, count in analysis.result.rows} == expected
        assert analysis.interpretation.coverage == "" and "Order time" not in analysis.interpretation.text
        assert len(selects(statements)) == 1
        sent.close()
    finally:
        gateway.close()


TWO_ROADS_MODEL = """
version: 1
dataset: {label: Transfers, description: Goods moved between sites.}
entities:
  sites:
    table: sites
    label: Site
    description: A place goods are kept.
    primary_key: site_id
    fields:
      site_id: {type: integer, label: Site key, exposure: never-to-model}
      name: {type: string, label: Site name, exposure: bounded-values}
      opened_on: {type: date, label: Opening date, exposure: bounded-values}
  transfers:
    table: transfers
    label: Transfer
    description: Goods moved from one site to another.
    primary_key: transfer_id
    fields:
      transfer_id: {type: integer, label: Transfer key, exposure: never-to-model}
      from_site: {type: integer, label: Origin key, exposure: never-to-model}
      to_site: {type: integer, label: Destination key, exposure: never-to-model}
      amount: {type: integer, label: Amount, exposure: aggregate-only}
    metrics:
      moved: {label: Amount moved, expression: sum(amount), type: integer}
relationships:
  origin: {from: transfers, to: sites, kind: many_to_one, from_field: from_site, to_field: site_id, label: Origin}
  destination:
    {from: transfers, to: sites, kind: many_to_one, from_field: to_site, to_field: site_id, label: Destination}
"""


def test_a_span_reached_by_two_roads_is_asked_apart(seeded, cert_dir, tmp_path):
    """Transfers are dated by a site's opening date, and reach a site two ways (origin, destination): no one
    join may stand for both, so the statement carries no span and the span is asked apart, as it always was
    (over the sites, from their own entity)."""
    if not seeded.startswith("sqlite"):
        pytest.skip("the planner's choice is the same on every backend; one small SQLite warehouse shows it")
    path = tmp_path / "transfers.sqlite"
    with sqlite3.connect(path) as connection:
        connection.executescript("""
            CREATE TABLE sites (site_id INTEGER PRIMARY KEY, name TEXT, opened_on DATE);
            CREATE TABLE transfers (transfer_id INTEGER PRIMARY KEY, from_site INTEGER, to_site INTEGER,
                                    amount INTEGER);
            INSERT INTO sites VALUES (1, 'North', '2020-03-01'), (2, 'South', '2021-07-15'), (3, 'East', '2022-01-09');
            INSERT INTO transfers VALUES (1, 1, 2, 5), (2, 2, 1, 7), (3, 1, 2, 11);""")
    model = tmp_path / "transfers.yaml"
    model.write_text(TWO_ROADS_MODEL)
    gateway = make_gateway(f"sqlite:///{path}", cert_dir, tmp_path, semantic_model=model)
    try:
        session = Session(gateway)
        sent = recorded_statements(gateway.warehouse.engine)
        statements = next(sent)
        analysis = session.analyze({"mode": "aggregate", "output": "scalar",
                                    "measures": [{"id": "moved", "metric": session.metric("transfers", "moved")}]})
        assert analysis.result.rows == [[23]]
        assert analysis.interpretation.coverage == "Opening date 1 Mar 2020 – 9 Jan 2022"
        assert len(selects(statements)) == 2
        sent.close()
    finally:
        gateway.close()
