"""Which way one period went against another ("are we getting more orders this year than last year?", "did
units sold go up or down last quarter?"): both periods side by side, and above them the later one against the
earlier, as its figure, the earlier one's, the change and the growth. Authors of held-out questions asked it
both ways (one row per period; one row with the change), and a person asking "more?" wants both."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from services.agent.composing import compose
from services.agent.drafting import plan
from services.agent.time_words import TimeSpan, later_against_earlier
from services.agent.understanding import understand
from tests.agent.unit.planner_slice import retail_slice

SLICE = retail_slice()
LATEST = dt.date(2025, 12, 31)
VIEW = {"components": [{"name": n, "id": n} for n in ("Heading", "Text", "FigureText", "Metric", "Chart",
                                                      "DataTable", "EvidenceNote", "Column")],
        "resources": [{"id": "r1", "offer": "o"}], "evidence": []}


def drafted(question: str):
    reading = understand(question, SLICE, [], None, LATEST)
    assert not reading.unknown, reading.unknown
    return reading, plan(reading, SLICE)


def against(question: str) -> str | None:
    calculations = drafted(question)[1].draft.get("calculations", [])
    return next((c["against"] for c in calculations if c["id"] == "prior"), None)


@pytest.mark.parametrize(("question", "how_far_back"), [
    ("Are we getting more orders this year than last year?", "previous_period"),
    ("did more people sign up in 2024 than in 2023?", "previous_period"),
    ("did units sold go up or down last quarter compared to the quarter before?", "previous_period"),
    ("is revenue higher this month than last month?", "previous_period"),
    ("did order volume go up or down from Q2 to Q3 this year?", "previous_period"),
    ("did q4 this year bring in more orders than q4 last year?", "same_period_last_year"),
    ("Q4 orders this yr vs Q4 last yr - up or down?", "same_period_last_year"),
    ("did we sell fewer units in 2025 than in 2024?", "previous_period"),
])
def test_a_which_way_question_sets_the_later_period_against_the_earlier(question, how_far_back):
    reading, answer = drafted(question)
    assert reading.which_way and against(question) == how_far_back
    assert answer.dimensions == ["t"] and answer.later_period is not None
    assert reading.compare is None  # (the periods stay side by side: not each against the one before it)


@pytest.mark.parametrize("question", [
    "orders q3 vs q4 2025?",  # set side by side, no direction asked
    "Number of orders in 2024 and 2025",
    "did we get more orders in 2025 than in 2023?",  # two years apart: no change of the draft's joins them
    "did we sell more units by channel in 2025 than in 2024?",  # more than the two periods broken down
])
def test_periods_only_set_side_by_side_get_no_change(question):
    reading, answer = drafted(question)
    assert answer.later_period is None and "calculations" not in answer.draft


def test_asked_by_how_much_it_stays_the_one_row_of_the_change():
    reading, answer = drafted("Is revenue up or down this year compared to last year, and by how much?")
    assert not reading.which_way and answer.later_period is None and reading.compare is not None


def test_the_surface_shows_the_later_period_against_the_earlier_above_both_periods():
    reading, answer = drafted("Are we getting more orders this year than last year?")
    blocks = compose(VIEW, reading, answer, 2)["blocks"]
    order = next(b for b in blocks if b["id"] == "main")["children"]
    figures = [b for b in blocks if b["component"] == "Metric"]
    assert [f["data"]["column"] for f in figures] == ["m0", "prior", "change", "growth"]
    assert {f["data"]["row"] for f in figures} == {1}  # all of the later period's row
    assert figures[1]["data"]["label"] == "Number of orders, the year before, to the same day"
    assert order.index("figure") < order.index("chart") < order.index("table")
    table = next(b for b in blocks if b["id"] == "table")
    assert table["data"]["columns"] == ["t", "m0"]  # each period once, not each one's own change
    sentence = next(b for b in blocks if b["id"] == "answer-text")["data"]
    assert sentence["text"].startswith("Number of orders was {value} in {period}, against {prior} the year before")
    assert {f["row"] for f in sentence["figures"].values()} == {1}
    assert {f["column"] for f in sentence["figures"].values()} == {"m0", "t", "prior", "change", "growth"}


def test_with_one_period_empty_there_is_no_change_to_show():
    reading, answer = drafted("did more people sign up in 2024 than in 2023?")
    blocks = compose(VIEW, reading, answer, 1)["blocks"]
    assert not [b for b in blocks if b["component"] == "Metric"]
    sentence = next(b for b in blocks if b["id"] == "answer-text")["data"]
    assert "prior" not in {f["column"] for f in sentence.get("figures", {}).values()}


def test_two_periods_of_different_kinds_are_not_set_against_each_other():
    relative = TimeSpan("relative", "last year", op="previous", unit="year")
    year = TimeSpan("between", "in 2023", start=dt.date(2023, 1, 1), end=dt.date(2024, 1, 1))
    assert later_against_earlier(TimeSpan("any", "", parts=(year, relative)), "year") is None
    far = TimeSpan("between", "in 2025", start=dt.date(2025, 1, 1), end=dt.date(2026, 1, 1))
    assert later_against_earlier(TimeSpan("any", "", parts=(year, far)), "year") is None  # two years apart
    next_year = TimeSpan("between", "in 2024", start=dt.date(2024, 1, 1), end=dt.date(2025, 1, 1))
    assert later_against_earlier(TimeSpan("any", "", parts=(year, next_year)), "year")[0] == "previous_period"


def test_repeated_comparing_words_stay_linear():
    started = time.process_time()  # (2,000 characters of comparing words: a regression guard on every pattern)
    reading = understand("more orders " + "higher lower more fewer " * 83 + "than last year", SLICE, [], None,
                         LATEST)
    assert time.process_time() - started < 2  # CPU time: a loaded machine does not fail it, a quadratic read does
    assert reading.which_way
