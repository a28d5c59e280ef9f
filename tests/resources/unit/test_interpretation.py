"""Every result says in words what was computed (§10b), on every backend.

The caption is built from the executed draft and the semantic model's labels;
the only figures in it come from the warehouse (rows matched, time span), and
the tests compute those independently with plain SQL.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from services.resources.interpretation import readable_day
from tessera.common.v1 import common_pb2


def scalar(engine, sql: str):
    with engine.connect() as connection:
        return connection.execute(sa.text(sql)).scalar()


def day(value) -> str:
    return readable_day(dt.datetime.fromisoformat(value) if isinstance(value, str) else value)


def test_an_unfiltered_total_says_no_filter_and_the_span_it_covers(session, raw_engine):
    analysis = session.analyze({"mode": "aggregate", "output": "scalar",
                                "measures": [{"id": "n", "metric": session.metric("orders", "order_count")}]})
    caption = analysis.interpretation
    first = day(scalar(raw_engine, "SELECT min(ordered_at) FROM orders"))
    last = day(scalar(raw_engine, "SELECT max(ordered_at) FROM orders"))
    assert list(caption.measures) == ["Number of orders"] and not caption.filters
    assert caption.coverage == f"Order time {first} – {last}"
    assert caption.text == f"Number of orders · no filter · Order time {first} – {last}"


def test_a_year_filter_reads_as_a_span_and_the_coverage_follows_it(session, raw_engine):
    field = session.field("orders", "ordered_at")
    analysis = session.analyze({
        "mode": "aggregate", "output": "scalar",
        "measures": [{"id": "n", "metric": session.metric("orders", "order_count")}],
        "filter": {"all": [{"field": field, "op": "gte", "value": "2024-01-01"},
                           {"field": field, "op": "lt", "value": "2025-01-01"},
                           {"field": session.field("orders", "status"), "op": "eq", "value": "cancelled"}]}})
    caption = analysis.interpretation
    assert list(caption.filters) == ["Order time 1 Jan 2024 – 31 Dec 2024", "Order status is \u201ccancelled\u201d"]
    first = day(scalar(raw_engine, "SELECT min(ordered_at) FROM orders WHERE status = 'cancelled' "
                                   "AND ordered_at >= '2024-01-01' AND ordered_at < '2025-01-01'"))
    assert caption.coverage.startswith(f"Order time {first} – ") and caption.coverage.endswith("2024")


def test_the_caption_says_a_span_once(session, raw_engine):
    """A filtered span the rows fill from its first month to its last is said once, by the filter; a span the
    data holds only part of says the rows' own span too."""
    field = session.field("orders", "ordered_at")

    def caption(since: str, until: str):
        return session.analyze({
            "mode": "aggregate", "output": "scalar",
            "measures": [{"id": "n", "metric": session.metric("orders", "order_count")}],
            "filter": {"all": [{"field": field, "op": "gte", "value": since},
                               {"field": field, "op": "lt", "value": until}]}}).interpretation

    def span(since: str, until: str) -> str:
        return " – ".join(day(scalar(raw_engine, f"SELECT {end}(ordered_at) FROM orders WHERE ordered_at >= "
                                                 f"'{since}' AND ordered_at < '{until}'")) for end in ("min", "max"))

    year = caption("2024-01-01", "2025-01-01")
    assert span("2024-01-01", "2025-01-01") != "1 Jan 2024 – 31 Dec 2024", "the rows should not fill every day"
    assert year.text == "Number of orders · Order time 1 Jan 2024 – 31 Dec 2024"
    assert year.coverage == f"Order time {span('2024-01-01', '2025-01-01')}"  # the structured span stays
    latest = str(scalar(raw_engine, "SELECT max(ordered_at) FROM orders"))[:4]
    since, beyond = f"{latest}-06-01", f"{int(latest) + 1}-07-01"  # to half a year past the data
    assert caption(since, beyond).text.endswith(f" · Order time of the rows used: {span(since, beyond)}")


def test_a_breakdown_names_its_grain_and_its_order(session):
    analysis = session.analyze({
        "mode": "aggregate", "output": "ranking",
        "measures": [{"id": "revenue", "metric": session.metric("order_items", "net_revenue")}],
        "dimensions": [{"id": "region", "field": session.field("regions", "name")}],
        "order_by": [{"output": "revenue", "direction": "desc"}]})
    caption = analysis.interpretation
    assert caption.text.startswith("Net revenue by Region name · no filter · highest Net revenue first · ")
    # Order items are dated by the order they belong to.
    assert caption.coverage.startswith("Order time ")
    series = session.analyze({
        "mode": "aggregate", "output": "series",
        "measures": [{"id": "n", "metric": session.metric("orders", "order_count")}],
        "dimensions": [{"id": "month", "field": session.field("orders", "ordered_at"), "grain": "month"}]})
    assert list(series.interpretation.dimensions) == ["Order time (month)"]
    assert series.interpretation.ordering == "earliest Order time (month) first"


def test_every_operator_reads_in_words(session):
    priority = session.field("support_tickets", "priority")
    opened = session.field("support_tickets", "opened_at")
    analysis = session.analyze({
        "mode": "aggregate", "output": "scalar",
        "measures": [{"id": "n", "metric": session.metric("support_tickets", "ticket_count")}],
        "filter": {"any": [{"field": priority, "op": "in", "values": ["high", "urgent"]},
                           {"not": {"field": priority, "op": "is_null"}},
                           {"field": opened, "op": "between", "values": ["2023-03-01", "2023-03-31"]},
                           {"field": opened, "op": "gt", "value": "2025-06-01T12:30:00"}]}})
    assert list(analysis.interpretation.filters) == [
        "(Ticket priority is one of \u201chigh\u201d, \u201curgent\u201d or not (Ticket priority is missing) or "
        "Ticket opened 1 Mar 2023 – 31 Mar 2023 00:00 or Ticket opened after 1 Jun 2025 12:30)"]


def test_a_span_says_whether_its_last_day_is_included(session):
    """`before 1 Jan` ends with 31 Dec; `on or before` a moment is said as it is, not as a whole day."""
    opened = session.field("support_tickets", "opened_at")

    def words(*bounds):
        return list(session.analyze({
            "mode": "aggregate", "output": "scalar",
            "measures": [{"id": "n", "metric": session.metric("support_tickets", "ticket_count")}],
            "filter": {"all": [{"field": opened, "op": op, "value": value} for op, value in bounds]}}
        ).interpretation.filters)

    assert words(("gte", "2024-12-01"), ("lt", "2025-01-01")) == ["Ticket opened 1 Dec 2024 – 31 Dec 2024"]
    assert words(("gte", "2024-12-01"), ("lte", "2025-01-01")) == [
        "Ticket opened on or after 1 Dec 2024", "Ticket opened on or before 1 Jan 2025 00:00"]
    assert words(("gte", "2024-12-01"), ("lt", "2025-01-01T14:00:00")) == [
        "Ticket opened on or after 1 Dec 2024", "Ticket opened before 1 Jan 2025 14:00"]


def test_a_capped_result_says_how_many_rows_it_kept_of_how_many(session, raw_engine, gateway):
    cap = gateway.settings.row_cap
    total = scalar(raw_engine, "SELECT count(*) FROM orders")
    assert total > cap, "the seed must be larger than the row cap for this test"
    analysis = session.analyze({
        "mode": "records", "entity": session.entity("orders"),
        "fields": [{"id": "at", "field": session.field("orders", "ordered_at")},
                   {"id": "channel", "field": session.field("orders", "channel")}],
        "order_by": [{"output": "at", "direction": "desc"}]})
    caption = analysis.interpretation
    assert analysis.descriptor.truncated
    assert caption.truncation == f"first {cap:,} rows of {total:,}"
    assert caption.text.startswith("Order records: Order time, Sales channel · no filter · latest Order time first")


def test_formats_come_from_the_semantic_model_and_the_grain(session):
    analysis = session.analyze({
        "mode": "aggregate", "output": "series",
        "measures": [{"id": "revenue", "metric": session.metric("order_items", "net_revenue")},
                     {"id": "rate", "metric": session.metric("order_items", "return_rate")},
                     {"id": "orders", "metric": session.metric("orders", "order_count")}],
        "dimensions": [{"id": "quarter", "field": session.field("orders", "ordered_at"), "grain": "quarter"}]})
    formats = {c.column_id: c.format for c in analysis.descriptor.columns}
    assert formats["quarter"].style == common_pb2.FORMAT_STYLE_DATE and formats["quarter"].grain == "quarter"
    assert formats["revenue"].style == common_pb2.FORMAT_STYLE_CURRENCY and formats["revenue"].currency == "USD"
    assert formats["rate"].style == common_pb2.FORMAT_STYLE_PERCENT and formats["rate"].decimals == 2
    assert formats["orders"].style == common_pb2.FORMAT_STYLE_INTEGER
    # Counts and sums add up across rows (a chart may total the rest as "Other"); a rate does not.
    additive = {c.column_id: c.additive for c in analysis.descriptor.columns}
    assert additive == {"quarter": False, "revenue": True, "rate": False, "orders": True}


def test_the_interpretation_travels_signed_with_the_offer(session, gateway):
    from shared.identity import tokens

    analysis = session.analyze({"mode": "aggregate", "output": "scalar",
                                "measures": [{"id": "n", "metric": session.metric("orders", "order_count")}]})
    claims = tokens.verify(gateway.signing_key.public_key(), tokens.PURPOSE_RESOURCE_OFFER, analysis.offer,
                           common_pb2.ResourceOfferClaims)
    assert claims.interpretation == analysis.interpretation
