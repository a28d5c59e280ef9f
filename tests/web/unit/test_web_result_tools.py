"""What a person can do with a result besides reading it (services/web/frontend/src/result-tools.js), run in Node:
the chart types its contract allows for the result, its rows as CSV a spreadsheet cannot run, and the follow-up
one of its values asks."""

from __future__ import annotations

import csv
import io

import pytest

from services.web.frontend.tools.catalog_schemas import chart_recipes
from shared.paths import REPO_ROOT
from shared.ui.contracts import DEFAULT_CATALOG, load_catalog
from tests.fixtures.node_module import called

TOOLS = REPO_ROOT / "services" / "web" / "frontend" / "src" / "result-tools.js"
RECIPES = chart_recipes(load_catalog(DEFAULT_CATALOG))  # as the bundle's generated module holds them
MONTH = {"id": "month", "label": "Order time (month)", "role": "time", "type": "date",
         "format": {"style": "date", "grain": "month"}}
REGION = {"id": "region", "label": "Region name", "role": "dimension", "type": "string", "format": {"style": "text"}}
CHANNEL = {"id": "channel", "label": "Sales channel", "role": "dimension", "type": "string"}
REVENUE = {"id": "revenue", "label": "Net revenue", "role": "measure", "type": "decimal", "additive": True}
AOV = {"id": "aov", "label": "Average order value", "role": "measure", "type": "decimal", "additive": False}


def _said(function: str, *arguments) -> object:
    return called(TOOLS, function, *arguments)


def _types(spec: dict, columns: list[dict]) -> dict[str, dict]:
    return {s["recipe"]: s for s in _said("chartTypes", spec, RECIPES, columns)}


def test_a_measure_over_time_switches_among_line_area_and_bars_keeping_its_columns():
    found = _types({"recipe": "line", "x": "month", "y": ["revenue"]}, [MONTH, REVENUE])
    assert list(found)[0] == "line" and set(found) == {"line", "area", "bar"}
    assert found["bar"] == {"recipe": "bar", "x": "month", "y": "revenue"}
    assert found["area"] == {"recipe": "area", "x": "month", "y": ["revenue"]}


def test_a_total_by_category_can_be_a_donut_and_an_average_cannot():
    assert set(_types({"recipe": "bar", "x": "region", "y": "revenue"}, [REGION, REVENUE])) == {"bar", "donut"}
    assert set(_types({"recipe": "bar", "x": "region", "y": "aov"}, [REGION, AOV])) == {"bar"}  # no share of a whole
    back = _types({"recipe": "donut", "category": "region", "value": "revenue"}, [REGION, REVENUE])["bar"]
    assert back == {"recipe": "bar", "x": "region", "y": "revenue"}


def test_two_dimensions_never_lose_one():
    columns = [REGION, CHANNEL, REVENUE]
    found = _types({"recipe": "grouped_bar", "x": "region", "series": "channel", "y": "revenue"}, columns)
    assert set(found) == {"grouped_bar", "stacked_bar", "heatmap"}  # never bars or a donut of one dimension
    assert found["heatmap"] == {"recipe": "heatmap", "x": "region", "y": "channel", "value": "revenue"}
    averaged = [REGION, CHANNEL, AOV]
    assert set(_types({"recipe": "grouped_bar", "x": "region", "series": "channel", "y": "aov"}, averaged)) == {
        "grouped_bar", "heatmap"}


def test_csv_holds_the_values_as_computed_and_no_formula_a_spreadsheet_would_run():
    rows = [["=HYPERLINK(\"http://evil\")", 1234.5], ["West, \"coast\"", None], ["-2+3", 7], ["@SUM(A1)", 0]]
    text = _said("csvOf", ["region", "revenue"], {"region": "Region name", "revenue": "Net revenue"}, rows)
    read = list(csv.reader(io.StringIO(text)))
    assert read[0] == ["Region name", "Net revenue"]
    assert read[1:] == [["'=HYPERLINK(\"http://evil\")", "1234.5"], ["West, \"coast\"", ""], ["'-2+3", "7"],
                        ["'@SUM(A1)", "0"]]
    assert _said("fileName", "Top 5 products by net revenue, 2025!") == "top-5-products-by-net-revenue-2025.csv"
    assert _said("fileName", "") == "answer.csv"


@pytest.mark.parametrize(("value", "column", "question"), [
    ("Apparel", REGION, "Just Apparel, by month"),
    ("2025-03-01", MONTH, "Just March 2025, by day"),
    ("2025-07-01", {**MONTH, "format": {"style": "date", "grain": "quarter"}}, "Just Q3 2025, by month"),
    ("2024-01-01", {**MONTH, "format": {"style": "date", "grain": "year"}}, "Just 2024, by month"),
    ("2025-03-04", {**MONTH, "format": {"style": "date", "grain": "day"}}, None),  # a day: nothing finer
    (1234.5, REVENUE, None),  # a figure is no dimension
    (None, REGION, None),
])
def test_one_value_asks_for_itself_one_step_finer(value, column, question):
    assert _said("drillQuestion", value, column) == question


def test_a_chart_reads_each_point_with_its_figure():
    points = [[f"R{i}", f"${i}.00"] for i in range(1, 33)]
    words = _said("chartWords", "Bar chart of Net revenue by Region name", points)
    assert words.startswith("Bar chart of Net revenue by Region name. R1: $1.00; R2: $2.00;")
    assert words.endswith("R30: $30.00; and 2 more (the table has them all).")
