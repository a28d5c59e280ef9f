"""The embedded planner's reading of questions, its drafts and its time words, on the retail catalog as the
model sees it (no services: pure functions)."""

from __future__ import annotations

import datetime as dt

import pytest

from services.agent.drafting import CannotPlan, plan
from services.agent.suggestions import closest
from services.agent.time_words import describe, find_time
from services.agent.understanding import Reading, understand, unexplained_words
from tests.agent.unit.planner_slice import match, retail_slice

SLICE = retail_slice()
VALUES = [match("web", "orders", "channel"), match("store", "orders", "channel"),
          match("cancelled", "orders", "status"), match("France", "regions", "country"),
          match("enterprise", "customers", "segment"), match("high", "support_tickets", "priority")]


def read(question: str, earlier: Reading | None = None) -> Reading:
    return understand(question, SLICE, VALUES, earlier)


def labels(items) -> list[str]:
    return [item["label"] for item in items]


@pytest.mark.parametrize(("question", "measures", "dimensions"), [
    ("What is our net revenue by region?", ["Net revenue"], ["Region name"]),
    ("revnue by chanel", ["Net revenue"], ["Sales channel"]),  # typos
    ("turnover by territory", ["Net revenue"], ["Region name"]),  # synonyms of a measure and of an entity
    ("Net revenue and units sold by channel", ["Net revenue", "Units sold"], ["Sales channel"]),
    ("Support tickets by ticket status", ["Number of support tickets"], ["Ticket status"]),
    ("how many returns were there", ["Number of returns"], []),  # "how many" counts the rows
    ("Returned units by return reason", ["Returned units"], ["Return reason"]),
    ("which product category sells the most units?", ["Units sold"], ["Product category"]),
    ("which return reason is most common", ["Number of returns"], ["Return reason"]),
    ("top 5 products by net revenue", ["Net revenue"], ["Product name"]),
])
def test_measures_and_dimensions(question, measures, dimensions):
    reading = read(question)
    assert (labels(reading.measures), labels(reading.dimensions), reading.unknown) == (measures, dimensions, [])


def test_values_become_filters_and_their_field_words_no_dimension():
    reading = read("Number of high priority tickets in France for web orders")
    assert {(f.field["label"], f.values) for f in reading.filters} == {
        ("Ticket priority", ("high",)), ("Country", ("France",)), ("Sales channel", ("web",))}
    assert reading.dimensions == [] and labels(reading.measures) == ["Number of support tickets"]


def test_two_values_of_one_field_are_a_list_or_a_side_by_side_comparison():
    listed = read("web and store orders by region")
    assert [f.values for f in listed.filters] == [("web", "store")] and listed.split is None
    versus = read("web vs store revenue by quarter")
    assert versus.split.values == ("web", "store") and versus.grain == "quarter" and not versus.filters


def test_ranking_words():
    top = read("bottom 3 product categories by units sold")
    assert (top.limit, top.direction, top.which) == (3, "asc", False)
    which = read("Which sales channel has the lowest number of orders?")
    assert (which.limit, which.direction, which.which) == (None, "asc", True)
    assert labels(which.dimensions) == ["Sales channel"]


def test_shares_ratios_and_comparisons():
    share = read("What share of orders are cancelled?")
    assert share.share.values == ("cancelled",) and not share.filters and not share.share_of_total
    of_total = read("share of net revenue by sales channel")
    assert of_total.share_of_total and of_total.share is None
    per = read("orders per customer by segment")
    assert per.per["label"] == "Customer" and labels(per.dimensions) == ["Customer segment"]
    yoy = read("Net revenue by month year over year")
    assert (yoy.compare, yoy.grain) == ("same_period_last_year", "month")
    previous = read("orders by quarter compared to the previous quarter")
    assert (previous.compare, previous.compare_grain) == ("previous_period", "quarter")


def test_follow_ups_change_the_earlier_reading():
    first = read("Net revenue by region")
    only_web = read("now only web", first)
    assert only_web.follow_up and labels(only_web.measures) == ["Net revenue"]
    assert labels(only_web.dimensions) == ["Region name"] and only_web.filters[0].values == ("web",)
    same_by = read("same by channel", only_web)
    assert labels(same_by.dimensions) == ["Sales channel"] and same_by.filters[0].values == ("web",)
    last_year = read("and last year?", same_by)
    assert (last_year.time.op, last_year.time.unit) == ("previous", "year")
    units = read("and units sold?", last_year)
    assert labels(units.measures) == ["Units sold"] and labels(units.dimensions) == ["Sales channel"]
    store = read("what about store?", units)
    assert [f.values for f in store.filters] == [("store",)]  # replaces web: one channel filter
    nothing = read("and?", first)
    assert nothing.unknown == ["and?"]  # nothing new: said, not the earlier answer again
    assert read("now only web").measures == []  # no earlier question: nothing to lean on


@pytest.mark.parametrize(("question", "unknown", "personal"), [
    ("Will it rain tomorrow?", ["will", "rain", "tomorrow"], []),
    ("profit margin by region", ["profit", "margin"], []),
    ("Show me customer email addresses", [], ["email addresses"]),
    ("revenue revenue revenue revenue banana", ["banana"], []),
])
def test_what_it_cannot_use_is_listed_never_dropped(question, unknown, personal):
    reading = read(question)
    assert (reading.unknown, reading.personal) == (unknown, personal)


def test_value_words_are_looked_for_before_typos_are_corrected():
    assert "refunded" in unexplained_words("refunded orders by channel", SLICE)  # not read as "refund"
    assert "cancelled" in unexplained_words("what share of orders are cancelled", SLICE)  # part of a label
    assert unexplained_words("Net revenue by region in 2025", SLICE) == set()  # no probe needed


def test_drafts():
    drafted = plan(read("Top 2 channels by net revenue in France last quarter"), SLICE)
    draft = drafted.draft
    assert draft["order_by"] == [{"output": "m0", "direction": "desc"}] and draft["limit"] == 2
    assert draft["output"] == "ranking" and draft["dimensions"] == [{"id": "d0", "field": "fld_orders.channel"}]
    assert {"field": "fld_regions.country", "op": "eq", "value": "France"} in draft["filter"]["all"]
    assert {"field": "fld_orders.ordered_at", "op": "previous", "unit": "quarter", "count": 1} in draft["filter"]["all"]
    share = plan(read("what percentage of orders were cancelled by channel"), SLICE).draft
    assert share["calculations"] == [{"id": "share", "kind": "share_of_total", "of": "m0", "within": ["d0"]}]
    assert share["having"] == {"output": "s", "op": "eq", "value": "cancelled"}
    per = plan(read("orders per customer"), SLICE)
    assert per.primary == "per" and per.draft["calculations"] == [
        {"id": "per", "kind": "ratio", "of": "m0", "to": "per_count"}]
    compare = plan(read("net revenue month over month in 2025"), SLICE).draft
    assert compare["dimensions"][0] == {"id": "t", "field": "fld_orders.ordered_at", "grain": "month"}
    assert [c["kind"] for c in compare["calculations"]] == ["prior", "change", "growth"]
    when = "fld_orders.ordered_at"
    assert compare["filter"] == {"all": [{"field": when, "op": "gte", "value": "2025-01-01T00:00:00"},
                                         {"field": when, "op": "lt", "value": "2026-01-01T00:00:00"}]}


def test_what_cannot_be_drafted_says_why():
    with pytest.raises(CannotPlan, match="cannot be limited by sales channel"):
        plan(read("Number of customers for web orders"), SLICE)  # customers do not belong to orders
    with pytest.raises(CannotPlan, match="no measure"):
        plan(Reading(), SLICE)


def test_suggestions_are_questions_the_planner_understands():
    offered = closest(read("Net revenue by weather"), SLICE)
    assert 1 <= len(offered) <= 3
    for question in offered:
        reading = read(question)
        assert reading.measures and not reading.unknown, question
        plan(reading, SLICE)


@pytest.mark.parametrize(("text", "kind", "start", "end", "words"), [
    ("net revenue in 2025", "between", dt.date(2025, 1, 1), dt.date(2026, 1, 1), "in 2025"),
    ("orders in q3 2024", "between", dt.date(2024, 7, 1), dt.date(2024, 10, 1), "in Q3 2024"),
    ("revenue in the third quarter of 2023", "between", dt.date(2023, 7, 1), dt.date(2023, 10, 1), "in Q3 2023"),
    ("gross revenue in march 2025", "between", dt.date(2025, 3, 1), dt.date(2025, 4, 1), "in March 2025"),
    ("orders since march 2024", "since", dt.date(2024, 3, 1), None, "since 1 March 2024"),
    ("revenue between 2022 and 2023", "between", dt.date(2022, 1, 1), dt.date(2024, 1, 1),
     "from 2022-01-01 to 2023-12-31"),
])
def test_absolute_time(text, kind, start, end, words):
    span, rest = find_time(text)
    assert (span.kind, span.start, span.end, describe(span)) == (kind, start, end, words)
    assert not any(ch.isdigit() for ch in rest)  # the words it read are taken out of the question


@pytest.mark.parametrize(("text", "op", "unit", "count"), [
    ("revenue last quarter", "previous", "quarter", 1), ("units in the last 12 months", "trailing", "month", 12),
    ("revenue year to date", "to_date", "year", 1), ("ytd revenue", "to_date", "year", 1),
    ("revenue this year", "to_date", "year", 1), ("revenue in the past two years", "trailing", "year", 2),
])
def test_relative_time(text, op, unit, count):
    span, _ = find_time(text)
    assert (span.kind, span.op, span.unit, span.count) == ("relative", op, unit, count)


def test_a_month_without_a_year_is_the_latest_such_month_in_the_data():
    span, _ = find_time("net revenue since march")
    assert span.kind == "since_month_latest"
    assert span.resolved(dt.date(2025, 12, 31)).start == dt.date(2025, 3, 1)
    assert span.resolved(dt.date(2025, 2, 10)).start == dt.date(2024, 3, 1)  # March has not come yet this year
    assert find_time("may I see revenue")[0] is None  # "may" the verb is no month


def test_a_thousand_repeated_words_are_read_once_and_quickly():
    import time

    started = time.perf_counter()
    banana = read(" ".join(["banana"] * 1000))
    revenue = read(" ".join(["revenue"] * 1000))
    # linear in the words (about 0.1 s here); a quadratic pass took seconds, and ten on a loaded machine
    assert time.perf_counter() - started < 10
    assert set(banana.unknown) == {"banana"} and not banana.measures
    assert labels(revenue.measures) == ["Net revenue"] and not revenue.unknown


def test_only_punctuation_or_another_language_is_never_a_plan():
    assert read("?!?...").measures == [] and read("?!?...").unknown == []
    spanish = read("¿Cuáles son las ventas netas por región?")
    assert {"cuáles", "ventas"} <= set(spanish.unknown)  # said as written, so nothing is planned


def test_a_sentence_over_two_dimensions_names_the_whole_combination():
    from services.agent.composing import compose

    reading = read("Net revenue by region and sales channel")
    drafted = plan(reading, SLICE)
    view = {"components": [{"name": n, "id": n} for n in ("Heading", "Text", "FigureText", "Metric", "Chart",
                                                          "DataTable", "EvidenceNote", "Column")],
            "resources": [{"id": "r1", "offer": "o"}], "evidence": []}
    sentence = next(b for b in compose(view, reading, drafted, 48)["blocks"] if b["id"] == "answer-text")
    assert sentence["data"]["text"] == "The highest net revenue is {value}, for {g0} and {g1}."
    assert [sentence["data"]["figures"][k]["column"] for k in ("value", "g0", "g1")] == ["m0", "d0", "d1"]
    assert {f["row"] for f in sentence["data"]["figures"].values()} == {0}  # all from the one row


def test_an_answers_heading_is_the_question_as_read_with_its_ranking_and_comparison():
    from services.agent.composing import reading_heading

    def heading(question: str, earlier: str | None = None) -> str:
        reading = read(question, earlier=read(earlier)) if earlier else read(question)
        return reading_heading(reading, plan(reading, SLICE))

    top = heading("Show the top 5 regions by net revenue")
    assert top.startswith("Net revenue by region") and top.endswith(", top 5"), top
    assert heading("Net revenue by region, lowest first").endswith(", lowest first")
    assert "2023" in heading("and just for 2023", earlier="Net revenue by month")  # a follow-up, as read
    assert heading("Net revenue by month vs the same period last year").endswith(" vs the same period last year")
