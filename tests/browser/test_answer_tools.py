"""What a person does with an answer besides reading it, in headless Chromium against the running set: every
bar of a chart named (at 1280 and at 390 px), a chart's words reading each point with its figure as the page
shows it, chart or table and the chart types the result allows, the rows saved as CSV through the block's own
grant, a value clicked asked about as a follow-up, and a chart type chosen kept to its own chart."""

from __future__ import annotations

import csv
import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.browser.test_browser import ask, month_label
from tests.fixtures.agent_commit import commit_as_agent
from tests.fixtures.golden.reference import expected_figures


def _top_products(warehouse_url, count: int) -> list[tuple[str, Decimal]]:
    totals = expected_figures(warehouse_url, {"metric": "net_revenue", "by": "product"}, "")
    return sorted(totals.items(), key=lambda item: -item[1])[:count]


def _units_by_month(warehouse_url) -> dict[str, Decimal]:
    return {key[:10]: value for key, value in
            expected_figures(warehouse_url, {"metric": "units_sold", "by": "month"}, "").items()}


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("width", [1280, 390])
def test_every_bar_of_a_top_10_is_named_and_the_chart_reads_each_figure(page, warehouse_url, width):
    page.set_viewport_size({"width": width, "height": 900})
    ask(page, "Show the top 10 products by net revenue")
    page.wait_for_selector("tessera-chart[data-drawn='10']", timeout=30_000)
    drawn = _squeezed(page.locator("tessera-chart svg").evaluate("svg => svg.textContent"))
    top = _top_products(warehouse_url, 10)
    # (a long name wraps over lines: its words, in order, with the line breaks taken out)
    assert [name for name, _ in top if _squeezed(name) not in drawn] == []
    words = page.locator("tessera-chart .chart").get_attribute("aria-label")
    assert words.startswith("Bar chart of Net revenue by Product name. ")
    name, revenue = top[0]
    assert f"{name}: ${revenue.quantize(Decimal('0.01')):,}" in words  # formatted as the page shows it
    screenshot(page, f"top-10-chart-{width}")


def test_a_trend_is_a_line_an_area_or_bars_and_a_table_of_the_same_rows(page, warehouse_url):
    ask(page, "Show units sold by month")
    chart = page.locator("tessera-chart")
    page.wait_for_selector("tessera-chart[data-drawn='60']", timeout=30_000)
    types = chart.locator("select option").all_inner_texts()
    assert types[0] == "Line chart" and sorted(types) == ["Area chart", "Bar chart", "Line chart"]
    chart.locator("select").select_option(label="Bar chart")
    expect(chart.locator(".chart")).to_have_attribute("aria-label", re.compile(r"^Bar chart of Units sold by "),
                                                      timeout=15_000)
    chart.get_by_role("button", name="Table").click()
    expect(chart.locator(".chart")).to_be_hidden()
    rows = chart.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(td => td.textContent.trim()))")
    by_month = _units_by_month(warehouse_url)
    assert [r[0] for r in rows] == [month_label(key) for key in sorted(by_month)]
    assert [Decimal(r[1].replace(",", "")) for r in rows] == [by_month[key] for key in sorted(by_month)]
    chart.get_by_role("button", name="Chart").click()
    expect(chart.locator(".chart")).to_be_visible()
    expect(chart.locator(".chart")).to_have_attribute("aria-label", re.compile(r"^Bar chart of "))
    screenshot(page, "trend-as-bars")


def test_the_rows_are_saved_as_csv_through_the_blocks_own_grant(page, warehouse_url):
    ask(page, "Show units sold by month")
    table = page.locator("tessera-data-table")
    table.locator("tbody tr").first.wait_for(timeout=30_000)
    with page.expect_download(timeout=30_000) as saving:
        table.get_by_role("button", name="Download CSV").click()
    with open(saving.value.path(), newline="", encoding="utf-8") as saved:
        rows = list(csv.reader(saved))
    by_month = _units_by_month(warehouse_url)
    assert rows[0] == ["Order time (month)", "Units sold"]
    assert {r[0][:10]: Decimal(r[1]) for r in rows[1:]} == by_month  # every row, not the page's 25
    expect(table.locator(".tool-status")).to_have_text(re.compile(rf"^Saved {len(by_month)} rows as .+\.csv\.$"))
    assert len(table.locator("tbody tr").all()) == 25  # the page still shows its own page of rows


def test_a_value_clicked_is_asked_about_as_a_follow_up(page):
    ask(page, "Show the top 10 products by net revenue")
    table = page.locator("tessera-data-table")
    first = table.locator("tbody tr td button.drill").first
    first.wait_for(timeout=30_000)
    name = first.inner_text()
    first.click()
    question = f"Just {name}, by month"
    expect(page.locator("#answer-state")).to_have_text(  # attached to the answer it drills into
        f"Answer to “{question}”, a follow-up to “Show the top 10 products by net revenue”", timeout=60_000)
    expect(page.locator("#answer-caption")).to_contain_text(f"Product name is “{name}”", timeout=15_000)
    expect(page.locator("#answer-caption")).to_contain_text("Net revenue by Order time (month)")


def _trend_and_regions_in_tabs(running_set, credentials, cert_dir, session: dict) -> None:
    """Commit, as the agent would, two charts in two tabs: net revenue by month (a line) and by region (bars)."""
    def drafts(metrics, fields):
        measures = [{"id": "revenue", "metric": metrics["Net revenue"]}]
        return [{"mode": "aggregate", "measures": measures, "output": "series",
                 "dimensions": [{"id": "month", "field": fields["Order time"], "grain": "month"}]},
                {"mode": "aggregate", "measures": measures, "output": "table",
                 "dimensions": [{"id": "region", "field": fields["Region name"]}]}]

    def blocks(ids, bound):
        trend, regions = bound
        return [{"id": "main", "component": ids["Tabs"], "data": {"labels": ["By month", "By region"]},
                 "children": ["trend", "regions"]},
                {"id": "trend", "component": ids["Chart"], "data": {"resource": trend, "spec": {
                    "recipe": "line", "x": "month", "y": ["revenue"]}}},
                {"id": "regions", "component": ids["Chart"], "data": {"resource": regions, "spec": {
                    "recipe": "bar", "x": "region", "y": "revenue"}}}]

    commit_as_agent(running_set, credentials, cert_dir, session, "Net revenue", drafts, blocks)


def test_a_chart_type_chosen_stays_with_its_own_chart_when_another_takes_its_place(page, running_set, credentials,
                                                                                  cert_dir):
    session = page.evaluate("fetch('/api/session').then(r => r.json())")
    _trend_and_regions_in_tabs(running_set, credentials, cert_dir, session)
    chart = page.locator("tessera-chart")
    expect(chart.locator(".chart")).to_have_attribute("aria-label", re.compile(r"^Line chart of Net revenue"),
                                                      timeout=30_000)
    chart.locator("select").select_option(label="Area chart")
    expect(chart.locator(".chart")).to_have_attribute("aria-label", re.compile(r"^Area chart of "))
    page.get_by_role("tab", name="By region").click()  # the renderer draws the other chart in the same element
    expect(chart.locator(".chart")).to_have_attribute(
        "aria-label", re.compile(r"^Bar chart of Net revenue by Region name"), timeout=15_000)
