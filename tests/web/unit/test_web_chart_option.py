"""A chart as the page draws it (services/web/frontend/src/chart-option.js), run in Node: every category named,
bars of long or many labels lying down, periods in time order, each point's words with its figure as the page
shows it, and the follow-up each drawn item asks; "Other" asks nothing."""

from __future__ import annotations

from shared.paths import REPO_ROOT
from tests.fixtures.node_module import called

CHART = REPO_ROOT / "services" / "web" / "frontend" / "src" / "chart-option.js"
PRODUCT = {"id": "product", "label": "Product name", "role": "dimension", "type": "string", "format": {"style": "text"}}
MONTH = {"id": "month", "label": "Order time (month)", "role": "time", "type": "date",
         "format": {"style": "date", "grain": "month"}}
REVENUE = {"id": "revenue", "label": "Net revenue", "role": "measure", "type": "decimal", "additive": True,
           "format": {"style": "currency", "currency": "USD", "decimals": 2}}


def _drawn(spec: dict, columns: list[dict], rows: list[list], **props) -> dict:
    window = {"columns": [c["id"] for c in columns], "rows": rows, "offset": 0}
    descriptor = {"columns": columns, "rowCount": len(rows), "truncated": False}
    return called(CHART, "chartOption", {"spec": spec, **props}, window, descriptor, 390)


def test_bars_of_long_names_lie_down_each_named_and_each_asking_about_itself():
    names = [f"Nordvik Smart Plug B{100 + i}" for i in range(10)]
    drawn = _drawn({"recipe": "bar", "x": "product", "y": "revenue"}, [PRODUCT, REVENUE],
                   [[name, 1000 - 10 * i] for i, name in enumerate(names)], top=10)
    category = drawn["option"]["yAxis"]
    assert category["type"] == "category" and category["data"] == names and category["inverse"] is True
    assert category["axisLabel"]["interval"] == 0  # every one named, none skipped
    assert drawn["option"]["xAxis"]["type"] == "value" and drawn["height"] > 320
    assert drawn["points"] == 10 and drawn["note"] == ""
    assert drawn["words"].startswith("Bar chart of Net revenue by Product name. Nordvik Smart Plug B100: $1,000.00;")
    assert drawn["questions"][0] == "Just Nordvik Smart Plug B100, by month"


def test_a_few_short_names_stand_and_still_every_one_is_named():
    drawn = _drawn({"recipe": "bar", "x": "product", "y": "revenue"}, [PRODUCT, REVENUE],
                   [["web", 3.5], ["store", 2.25], ["phone", 1]])
    assert drawn["option"]["xAxis"]["data"] == ["web", "store", "phone"] and drawn["height"] == 0
    assert drawn["option"]["xAxis"]["axisLabel"]["interval"] == 0


def test_a_trend_keeps_its_periods_in_order_and_a_month_asks_for_its_days():
    rows = [[f"2025-{m:02d}-01", 100.0 * m] for m in range(1, 13)]
    drawn = _drawn({"recipe": "line", "x": "month", "y": ["revenue"]}, [MONTH, REVENUE], rows)
    assert drawn["option"]["xAxis"]["type"] == "category" and len(drawn["option"]["xAxis"]["data"]) == 12
    assert "axisLabel" not in drawn["option"]["xAxis"]  # periods: the axis names as many as fit
    assert drawn["questions"][2] == "Just March 2025, by day"
    assert drawn["words"].startswith("Line chart of Net revenue by Order time (month). ")


def test_the_rest_added_up_as_other_asks_nothing():
    rows = [[f"Product {i:02d}", 100.0 - i] for i in range(20)]
    drawn = _drawn({"recipe": "bar", "x": "product", "y": "revenue"}, [PRODUCT, REVENUE], rows, maxCategories=12)
    assert drawn["points"] == 12 and drawn["questions"][-1] is None
    assert drawn["option"]["yAxis"]["data"][-1] == "Other (9)"
    assert drawn["note"] == "Showing the top 11 of 20 Product name by Net revenue; the other 9 are added up as Other."
