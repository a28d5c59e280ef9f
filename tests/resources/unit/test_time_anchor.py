"""What relative periods count from (the semantic model's `time_anchor`): today by default, the gateway's date
(here a stand-in for its clock), or the latest date in the data; the caption says which."""

from __future__ import annotations

import datetime as dt

import pytest

from shared.paths import REPO_ROOT
from tests.resources.conftest import SUPPLY_MODEL, Session, make_gateway
from tests.resources.unit.test_semantic_suite import as_datetime, by_output, raw_rows

TODAY = dt.date(2024, 8, 20)  # a Tuesday; the supply data runs to 31 Dec 2024
RETAIL_TODAY = dt.date(2025, 6, 15)  # within the retail data, which runs to the end of 2025
RETAIL_MODEL = REPO_ROOT / "deploy" / "semantic-models" / "retail.yaml"


def anchored_today(model_text: str, warehouse_url: str, cert_dir, tmp_path_factory, today: dt.date):
    """A gateway over `warehouse_url` whose model has no time_anchor (so: today), its clock saying `today`."""
    assert "time_anchor: latest_data\n" in model_text
    folder = tmp_path_factory.mktemp("anchor")
    model = folder / "model.yaml"
    model.write_text(model_text.replace("time_anchor: latest_data\n", ""))
    return make_gateway(warehouse_url, cert_dir, folder, semantic_model=model, today=lambda: today)


@pytest.fixture(scope="module")
def supply_today(supply_warehouse_url, cert_dir, tmp_path_factory):
    built = anchored_today(SUPPLY_MODEL.read_text(), supply_warehouse_url[1], cert_dir, tmp_path_factory, TODAY)
    yield Session(built)
    built.close()


@pytest.fixture(scope="module")
def retail_today(warehouse, cert_dir, tmp_path_factory):
    built = anchored_today(RETAIL_MODEL.read_text(), warehouse, cert_dir, tmp_path_factory, RETAIL_TODAY)
    yield Session(built)
    built.close()


@pytest.fixture(scope="module")
def order_days():
    from tests.fixtures import supply_warehouse

    return [order["o_orderdate"] for order in supply_warehouse.generate()["sup_orders"]]


def orders_in(session, relative: str, unit: str, count: int | None = None):
    """Number of orders in a relative period of the supply model's order date: (the figure, the caption's words)."""
    period = {"field": session.field("orders", "order_date"), "op": relative, "unit": unit}
    if count is not None:
        period["count"] = count
    analysis = session.analyze({"mode": "aggregate", "filter": period,
                                "measures": [{"id": "orders", "metric": session.metric("orders", "order_count")}]})
    [words] = analysis.interpretation.filters
    return by_output(analysis)[0]["orders"], words


@pytest.mark.parametrize("relative,unit,count,first,last,phrase", [
    ("previous", "quarter", None, (2024, 4, 1), (2024, 6, 30), "in the previous quarter (1 Apr 2024 – 30 Jun 2024)"),
    ("trailing", "day", 30, (2024, 7, 22), (2024, 8, 20), "in the last 30 days (22 Jul 2024 – 20 Aug 2024)"),
    # months are whole, as people count them, this one so far included
    ("trailing", "month", 3, (2024, 6, 1), (2024, 8, 20), "in the last 3 months (1 Jun 2024 – 20 Aug 2024)"),
    ("to_date", "year", None, (2024, 1, 1), (2024, 8, 20), "year to date (1 Jan 2024 – 20 Aug 2024)"),
    ("previous", "week", 2, (2024, 8, 5), (2024, 8, 18), "in the previous 2 weeks (5 Aug 2024 – 18 Aug 2024)"),
])
def test_a_model_without_an_anchor_counts_periods_from_today(supply_today, order_days, relative, unit, count,
                                                            first, last, phrase):
    assert supply_today.gateway.model.time_anchor == "today"
    start, end = dt.date(*first), dt.date(*last)
    figure, words = orders_in(supply_today, relative, unit, count)
    assert figure == sum(1 for day in order_days if start <= day <= end) > 0
    assert words == f"Order date {phrase}, counted from today (20 Aug 2024)"


def test_the_same_period_anchored_to_the_data_counts_from_its_latest_date(supply, supply_today, order_days):
    """One draft, two anchors: the latest order day (31 Dec 2024) puts "the previous quarter" in Q3, today in Q2."""
    assert supply.gateway.model.time_anchor == "latest_data"
    figure, words = orders_in(supply, "previous", "quarter")
    assert figure == sum(1 for day in order_days if dt.date(2024, 7, 1) <= day <= dt.date(2024, 9, 30)) > 0
    assert words == ("Order date in the previous quarter (1 Jul 2024 – 30 Sep 2024), counted from the latest data "
                     "(31 Dec 2024)")
    assert figure != orders_in(supply_today, "previous", "quarter")[0]


def test_today_counts_whole_days_of_a_time_field(retail_today, raw_engine):
    """Order time is a timestamp: "the last 7 days" from today are seven whole days, today's every order in."""
    times = [as_datetime(value) for (value,) in raw_rows(raw_engine, "SELECT ordered_at FROM orders")]
    start, end = dt.datetime(2025, 6, 9), dt.datetime(2025, 6, 16)
    analysis = retail_today.analyze({
        "mode": "aggregate", "measures": [{"id": "orders", "metric": retail_today.metric("orders", "order_count")}],
        "filter": {"field": retail_today.field("orders", "ordered_at"), "op": "trailing", "unit": "day", "count": 7}})
    assert by_output(analysis)[0]["orders"] == sum(1 for moment in times if start <= moment < end) > 0
    assert any(dt.datetime(2025, 6, 15) <= moment < end for moment in times), "today's orders are counted"
    [words] = analysis.interpretation.filters
    assert words == "Order time in the last 7 days (9 Jun 2025 – 15 Jun 2025), counted from today (15 Jun 2025)"
