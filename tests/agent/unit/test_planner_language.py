"""How people ask, read by the embedded planner (issue 40): comparisons, change over time, averages, verbs
that date a row, states, top-N variants, "<measure> from <value> <entity>", one-click readings when a word
is unknown, and the rule that every word that changes meaning either changes the draft or is refused."""

from __future__ import annotations

import copy
import datetime as dt
import time

import pytest

from services.agent.drafting import CannotPlan, plan
from services.agent.suggestions import exact_reading
from services.agent.understanding import understand
from tests.agent.unit.planner_slice import match, retail_slice

SLICE = retail_slice()
VALUES = [match("web", "orders", "channel"), match("store", "orders", "channel"),
          match("phone", "orders", "channel"), match("marketplace", "orders", "channel"),
          match("cancelled", "orders", "status"), match("refunded", "orders", "status"),
          match("France", "regions", "country"), match("Canada", "regions", "country"),
          match("United States", "regions", "country"), match("enterprise", "customers", "segment"),
          {**match("small_business", "customers", "segment"), "matched_text": "small business"},
          {**match("web", "orders", "channel"), "matched_text": "online"},
          match("open", "support_tickets", "status"), match("high", "support_tickets", "priority"),
          match("Apparel", "products", "category"), match("Grocery", "products", "category")]


def read(question: str, latest: dt.date | None = None):
    return understand(question, SLICE, VALUES, latest=latest)


def labels(items) -> list[str]:
    return [item["label"] for item in items]


def period(reading) -> tuple:
    span = reading.time
    return (span.kind, span.start, span.end) if span.kind != "relative" else (span.kind, span.op, span.unit,
                                                                               span.count)


# --- comparisons ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("question", "values"), [
    ("compare net revenue for web vs store in 2024", ("web", "store")),
    ("how do enterprise and small business customers compare on average order value?",
     ("enterprise", "small_business")),
    ("Do we get more support tickets from customers in Canada or in the United States?", ("Canada", "United States")),
    ("is the average discount higher on phone orders than on marketplace orders?", ("phone", "marketplace")),
    ("Return rate: Apparel vs Grocery?", ("Apparel", "Grocery")),
])
def test_values_set_against_each_other_are_a_split(question, values):
    reading = read(question)
    assert reading.split.values == values and not reading.unknown and not reading.filters


def test_values_listed_without_a_comparison_are_one_filter():
    reading = read("How many web or phone orders by region?")
    assert [f.values for f in reading.filters] == [("web", "phone")] and reading.split is None


@pytest.mark.parametrize(("question", "start", "end", "grain"), [
    ("Was revenue higher in 2025 than in 2024?", dt.date(2024, 1, 1), dt.date(2026, 1, 1), "year"),
    ("net revenue for 2024 and 2025", dt.date(2024, 1, 1), dt.date(2026, 1, 1), "year"),
    ("units sold Q3 vs Q4 2025", dt.date(2025, 7, 1), dt.date(2026, 1, 1), "quarter"),
    ("orders in March and April 2024 by month", dt.date(2024, 3, 1), dt.date(2024, 5, 1), "month"),
])
def test_periods_named_together_are_shown_side_by_side(question, start, end, grain):
    reading = read(question)
    assert (period(reading), reading.grain, reading.compare, reading.unknown) == (
        ("between", start, end), grain, None, [])


def test_periods_apart_are_only_those_periods():
    reading = read("How do sales in Q1 2025 compare to Q1 2024?")
    assert reading.time.kind == "any" and reading.grain == "quarter" and not reading.unknown
    condition = plan(reading, SLICE).draft["filter"]
    assert [part["all"][0]["value"] for part in condition["any"]] == ["2024-01-01T00:00:00", "2025-01-01T00:00:00"]


def test_periods_of_different_lengths_are_refused_with_why():
    reading = read("net revenue in 2024 and in Q3 2025")
    assert reading.unknown == ["in 2024, in q3 2025"] and "one length" in reading.reasons["in 2024, in q3 2025"]


# --- change over time ----------------------------------------------------------------------------------------

def test_growth_between_two_named_periods_is_the_later_against_the_earlier():
    reading = read("What was our order growth in 2025 compared with 2024?")
    assert (period(reading), reading.compare, reading.grain) == (
        ("between", dt.date(2025, 1, 1), dt.date(2026, 1, 1)), "previous_period", "year")
    apart = read("revenue growth in 2025 compared with 2022")
    assert apart.unknown and "period just before" in apart.reasons[apart.unknown[0]]


def test_up_or_down_against_the_period_before_shows_both_periods():
    reading = read("did units sold go up or down last quarter compared to the quarter before?")
    assert (period(reading), reading.grain, reading.compare, reading.unknown) == (
        ("relative", "previous", "quarter", 2), "quarter", None, [])


@pytest.mark.parametrize(("question", "grain", "compare"), [
    ("how has net revenue trended year over year?", "year", "same_period_last_year"),
    ("How has average order value changed year by year since 2023?", "year", "previous_period"),
    ("monthly order trend for 2025 please", "month", None),
    ("revenue growth by category, 2025 vs 2024", "year", "previous_period"),
    ("Which month had the most orders?", "month", None),
])
def test_change_and_trend_words(question, grain, compare):
    reading = read(question)
    assert (reading.grain, reading.compare, reading.unknown) == (grain, compare, [])


def test_a_share_growing_is_the_share_over_time():
    reading = read("Is the web channel's share of revenue growing? Show it per year")
    assert reading.share.values == ("web",) and reading.grain == "year" and reading.compare is None
    draft = plan(reading, SLICE).draft
    assert draft["calculations"] == [{"id": "share", "kind": "share_of_total", "of": "m0", "within": ["t"]}]


# --- averages ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("question", "measure", "per"), [
    ("what's our average order value?", "Average order value", None),
    ("whats the avg ordr value in the phone chanel", "Average order value", None),
    ("Typical basket size for our enterprise customers?", "Average order value", None),
    ("On average how many units are in an order? 2025 only", "Units sold", "Order"),
    ("average number of orders per customer", "Number of orders", "Customer"),
    ("mean discount on Apparel items", "Average discount rate", None),
])
def test_average_words_use_an_average_measure_a_ratio_or_an_averaged_amount(question, measure, per):
    reading = read(question)
    assert (labels(reading.measures), (reading.per or {}).get("label"), reading.unknown) == ([measure], per, [])


def test_an_averaged_amount_is_drafted_as_an_average_of_the_field():
    draft = plan(read("mean discount on Apparel items"), SLICE).draft
    assert draft["measures"] == [{"id": "m0", "aggregation": "avg", "field": "fld_order_items.discount"}]


def test_an_average_of_a_total_with_nothing_to_divide_by_is_refused_with_an_example():
    reading = read("average net revenue by region")
    assert reading.unknown == ["average"]
    assert reading.reasons["average"] == "an average needs what it is per, e.g. \u201cnet revenue per order\u201d"
    assert read("discount by channel").unknown == ["discount"]  # an amount is only ever averaged


# --- verbs that date a row, states, top N ----------------------------------------------------------------------

@pytest.mark.parametrize(("question", "measure", "dated_by"), [
    ("how many customers signed up in 2024?", "Number of customers", "Signup date"),
    ("How many new customers joined each year since 2022?", "Number of customers", "Signup date"),
    ("How many orders were placed in December 2025?", "Number of orders", "Order time"),
    ("tickets created in 2025, split by priority", "Number of support tickets", "Ticket opened"),
    ("number of support tickets opened last quarter", "Number of support tickets", "Ticket opened"),
    ("How many units were returned in 2024?", "Returned units", "Return time"),
    ("net revenue from customers who signed up in 2024", "Net revenue", "Signup date"),
])
def test_event_verbs_say_which_date_counts(question, measure, dated_by):
    reading = read(question)
    assert (labels(reading.measures), reading.time_field["label"], reading.unknown) == ([measure], dated_by, [])


def test_an_event_verb_of_something_not_asked_about_is_refused():
    assert read("How many new orders in 2024?").unknown == ["new"]  # a customer's signup says nothing of orders


@pytest.mark.parametrize(("question", "values"), [
    ("how many support tickets are still open?", ("open",)),
    ("revenue from cancelled orders", ("cancelled",)),
    ("how many online orders last year", ("web",)),
])
def test_states_and_values_filter(question, values):
    reading = read(question)
    assert [f.values for f in reading.filters] == [values] and not reading.unknown


def test_a_value_that_begins_a_measure_name_is_that_measure_unless_it_says_whose_rows():
    both = read("Net revenue and cancelled orders by month")
    assert labels(both.measures) == ["Net revenue", "Cancelled orders"] and not both.filters
    draft = plan(read("revenue from cancelled orders"), SLICE).draft
    assert draft["filter"] == {"field": "fld_orders.status", "op": "eq", "value": "cancelled"}
    assert draft["measures"] == [{"id": "m0", "metric": "met_order_items.net_revenue"}]


def test_top_n_variants():
    largest = read("What are the 10 largest regions by net revenue?")
    assert (largest.limit, largest.direction, labels(largest.dimensions)) == (10, "desc", ["Region name"])
    orders = read("the 20 largest orders")
    assert orders.unknown == ["orders"] and "cannot show each order on its own" in orders.reasons["orders"]


def test_a_quarter_without_a_year_is_read_again_knowing_now():
    first = read("Compare Q1 and Q2 revenue")
    assert first.needs_latest and not first.unknown
    again = read("Compare Q1 and Q2 revenue", latest=dt.date(2025, 12, 31))
    assert (period(again), again.grain, again.needs_latest) == (
        ("between", dt.date(2025, 1, 1), dt.date(2025, 7, 1)), "quarter", False)


# --- one-click readings --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("question", "offered"), [
    ("Net revenue by weather in 2024", "Net revenue in 2024"),
    ("net revenue by region per unicorn for web", "Net revenue by region name for sales channel web"),
    ("average net revenue by channel last quarter", "Net revenue by sales channel in the previous quarter"),
    ("top 3 regions by net revenue since march 2024 in atlantis",
     "Net revenue by region name since march 2024, top 3"),
    ("how many customers signed up in 2024 on a tuesday", "Number of customers with signup date in 2024"),
    ("units sold for web vs store year over year in Grocery please kindly",
     "Units sold for product category Grocery for web vs store, year over year"),
])
def test_the_closest_full_reading_is_offered_and_reads_back_as_itself(question, offered):
    reading = read(question)
    assert reading.unknown
    assert exact_reading(reading, SLICE, VALUES) == offered
    again = read(offered)
    assert not again.unknown and plan(again, SLICE)


# --- never a different question ------------------------------------------------------------------------------

BASES = ["Net revenue by sales channel", "Number of support tickets", "Number of customers by customer segment"]
TIMES = ["in 2024", "last quarter", "since March 2024", "in Q3 2025", "in 2024 and 2025", "year to date",
         "in the last 6 months", "in 2022 vs 2025"]
COMPARISONS = ["vs last year", "year over year", "compared to the previous quarter", "growth"]


def _outcome(question: str) -> dict | str:
    """The draft the question is answered with, or "refused" (words named as unusable, or no draft)."""
    reading = read(question, latest=dt.date(2025, 12, 31))
    if reading.unknown or reading.personal:
        return "refused"
    try:
        return plan(reading, SLICE).draft
    except CannotPlan:
        return "refused"


def _catalog_words() -> dict[str, list[str]]:
    """The words of the catalog that change what is asked, by kind."""
    entities = [w for e in SLICE for w in [e["label"], *e.get("synonyms", [])]]
    measures = [w for e in SLICE for m in e["metrics"] for w in [m["label"], *m.get("synonyms", [])]]
    fields = [w for e in SLICE for f in e["fields"] if f["exposure"] == "bounded-values"
              for w in [f["label"], *f.get("synonyms", [])]]
    values = sorted({m.get("matched_text") or m["untrusted_value"] for m in VALUES})
    return {"entity": entities, "measure": measures, "field": fields, "value": values, "time": TIMES,
            "comparison": COMPARISONS}


def test_every_word_that_changes_meaning_changes_the_draft_or_is_refused():
    unchanged = []
    for base in BASES:
        before = _outcome(base)
        assert before != "refused", base
        asked = read(base)
        owner = asked.measures[0]["entity_id"]
        already = {w for item in [*asked.measures, *asked.dimensions] for w in [item["label"], *item["synonyms"]]}
        for kind, found in _catalog_words().items():
            for word in (w for w in found if w not in already):  # naming again what is asked changes nothing
                question = {"measure": f"{base} and {word}", "field": f"{base} by {word}"}.get(kind, f"{base} {word}")
                after = _outcome(question)
                if after == before and not (kind == "entity" and _reaches(owner, word)):
                    unchanged.append((kind, question))
    assert unchanged == []


def _reaches(owner: str, word: str) -> bool:
    """An entity the measure's rows belong to only says whose rows they are ("revenue from customers")."""
    from services.agent.understanding import reachable

    named = [e["id"] for e in SLICE if word in (e["label"], *e.get("synonyms", []))]
    return any(entity in reachable(SLICE, owner) for entity in named)


# --- bad input -----------------------------------------------------------------------------------------------

def test_two_thousand_characters_of_comparison_words_stay_linear():
    text = ("compare web vs store higher than 2024 and 2025 or " * 60)[:2000]
    started = time.perf_counter()
    read(text)
    assert time.perf_counter() - started < 5  # about 0.05 s here; quadratic work would take minutes


def test_a_value_the_measure_cannot_reach_is_refused_before_any_query():
    with pytest.raises(CannotPlan, match="cannot be broken down by sales channel"):
        plan(read("Number of customers for web vs store"), SLICE)
    with pytest.raises(CannotPlan, match="cannot be limited by ticket priority"):
        plan(read("net revenue from high priority tickets"), SLICE)


def test_another_form_of_an_event_verb_with_no_period_is_no_date():
    without_open = [m for m in VALUES if m["untrusted_value"] != "open"]
    reading = understand("how many support tickets are open", SLICE, without_open)
    assert reading.unknown == ["open"]  # not read as "opened" and answered with every ticket
    assert read("tickets opening in 2024").time_field["label"] == "Ticket opened"


# --- how people frame a question -----------------------------------------------------------------------------

ASKED_PLAINLY = [
    "hi! could you tell me how many online orders we've had this quarter?",
    "quick one - how many support tickets have been raised so far this year",
    "how many tickets are open right now?",
    "is the phone channel going up or down? number of phone orders by year",
    "which 3 regions are the weakest for us this year in terms of revenue?",
    "How many support cases have come from customers in France?",
    "top 3 catagories by units sold last yaer?",
    "Can you pull gross sales for 2024 and 2025 side by side? Need it for a board slide.",
    "what's the typical list price of something in our Apparel department?",
    "wich categroy had the most retruns in 2025",
    "How many customers signed up during 2024? Trying to size our acquisition numbers for the board pack.",
    "What was our average order value for calendar year 2025?",
    "Please provide the year-over-year growth in net revenue for 2025 relative to 2024.",
    "What proportion of the orders placed in 2025 were subsequently cancelled?",
    "which 5 categories are bringing in the most revenue this year",
    "is in-store shrinking? store share of orders per year",
]


@pytest.mark.parametrize("question", ASKED_PLAINLY)
def test_framing_and_plain_speech_change_nothing(question):
    reading = read(question)
    assert reading.measures and not reading.unknown and not reading.personal, (reading.unknown, reading.personal)


def test_a_short_aside_may_restrict_and_is_never_passed_over():
    assert read("Revenue by month. Weekends.").unknown == ["weekends"]

def test_framed_questions_are_read_as_asked():
    weakest = read("which 3 regions are the weakest for us this year in terms of revenue?")
    assert (weakest.limit, weakest.direction, labels(weakest.dimensions)) == (3, "asc", ["Region name"])
    phone = read("is the phone channel going up or down? number of phone orders by year")
    assert [f.values for f in phone.filters] == [("phone",)] and phone.grain == "year"
    typo = read("top 3 catagories by units sold last yaer?")
    assert (typo.time.op, typo.time.unit, typo.limit) == ("previous", "year", 3)
    per_order = read("On average, how many units are in a single order?")
    assert per_order.per["label"] == "Order"


def test_percent_signs_and_becoming_words_ask_for_a_share():
    third_party = {**match("marketplace", "orders", "channel"), "matched_text": "third-party"}
    share = understand("What % of this year's revenue came through third-party marketplaces?", SLICE, [third_party])
    assert share.share.values == ("marketplace",) and share.time.op == "to_date" and not share.unknown
    per_channel = read("Out of all orders per channel, what fraction ends up cancelled?")
    assert per_channel.share.values == ("cancelled",) and labels(per_channel.dimensions) == ["Sales channel"]


def test_a_follow_up_naming_whose_rows_keeps_the_measure():
    earlier = read("how many orders did each channel get in 2024")
    later = understand("ok now just for enterprise customers", SLICE, VALUES, earlier)
    assert labels(later.measures) == ["Number of orders"] and [f.values for f in later.filters] == [("enterprise",)]


def test_a_measure_per_its_own_rows_is_the_measure():
    reading = read("average order value per order by channel")
    assert reading.per is None and labels(reading.measures) == ["Average order value"]


# --- periods, follow-ups and what is never passed over ------------------------------------------------------

def follow(earlier: str, question: str, latest: dt.date | None = None):
    return understand(question, SLICE, VALUES, read(earlier, latest), latest)


@pytest.mark.parametrize(("question", "start", "end"), [
    ("revenue from march to may 2024", dt.date(2024, 3, 1), dt.date(2024, 6, 1)),
    ("revenue between march 2024 and may 2024", dt.date(2024, 3, 1), dt.date(2024, 6, 1)),
    ("revenue from Q1 to Q3 2024", dt.date(2024, 1, 1), dt.date(2024, 10, 1)),
    ("revenue 2022-2024", dt.date(2022, 1, 1), dt.date(2025, 1, 1)),
    ("revenue 2022 through 2024", dt.date(2022, 1, 1), dt.date(2025, 1, 1)),
    ("revenue Q1\u2013Q3 2024", dt.date(2024, 1, 1), dt.date(2024, 10, 1)),
])
def test_a_range_is_one_stretch_with_its_middle(question, start, end):
    reading = read(question)
    assert (period(reading), reading.grain, reading.unknown) == (("between", start, end), None, [])


def test_a_year_written_once_goes_back_across_a_range_for_periods_later_in_the_calendar():
    winter = read("revenue from december to february 2025")
    assert period(winter) == ("between", dt.date(2024, 12, 1), dt.date(2025, 3, 1))
    listed = read("was revenue higher in november or march 2024")  # listed, not a range: both that year
    assert [p.start for p in listed.time.parts] == [dt.date(2024, 3, 1), dt.date(2024, 11, 1)]
    of_year = read("revenue in Q1 and Q2 of 2025", latest=dt.date(2026, 3, 1))
    assert period(of_year) == ("between", dt.date(2025, 1, 1), dt.date(2025, 7, 1))


def test_a_follow_up_with_a_month_alone_is_read_again_and_never_drafted_unresolved():
    later = follow("net revenue by sales channel", "and in Q3?")
    assert later.needs_latest
    with pytest.raises(CannotPlan, match="which"):
        plan(later, SLICE)
    resolved = follow("net revenue by sales channel", "and in Q3?", latest=dt.date(2025, 12, 31))
    assert period(resolved) == ("between", dt.date(2025, 7, 1), dt.date(2025, 10, 1))


def test_subtracting_words_are_not_comparisons():
    reading = read("web vs store revenue less cancelled orders")
    assert "less" in reading.unknown


def test_a_percentage_change_is_a_change_not_a_share():
    reading = read("percentage change in revenue by year")
    assert (reading.compare, reading.share_of_total, reading.grain) == ("previous_period", False, "year")


def test_growth_over_several_periods_in_a_row_is_each_against_the_one_before():
    reading = read("revenue growth in 2023, 2024 and 2025")
    assert (period(reading), reading.compare, reading.unknown) == (
        ("between", dt.date(2023, 1, 1), dt.date(2026, 1, 1)), "previous_period", [])


@pytest.mark.parametrize("question", ["revenue not from web", "revenue for channels other than web",
                                      "orders that were never refunded"])
def test_no_reading_is_offered_when_a_dropped_word_turns_the_question_around(question):
    reading = read(question)
    assert reading.unknown and exact_reading(reading, SLICE, VALUES) is None


def test_an_offered_reading_can_be_drafted():
    reading = read("number of customers for web vs store in atlantis")
    assert reading.unknown and exact_reading(reading, SLICE, VALUES) is None  # customers are not by channel


def test_an_event_verb_needs_a_when():
    reading = read("how many new customers")
    assert reading.unknown == ["new"] and reading.reasons["new"].startswith("say when")


def test_averages_over_periods_and_amounts_alone_say_why():
    per_month = read("average orders per month")
    assert per_month.reasons["average"].startswith("I cannot average over periods: ask for it by month")
    alone = read("discount by channel")
    assert alone.reasons["discount"] == ("discount rate is never shown as it is, only averaged: ask for "
                                         "\u201caverage discount rate\u201d")


def test_done_by_is_not_a_breakdown():
    reading = read("how many tickets were filed by enterprise customers in 2024")
    assert [f.values for f in reading.filters] == [("enterprise",)] and not reading.dimensions
    assert not reading.unknown


def test_follow_ups_keep_what_they_do_not_change():
    signed = follow("number of customers by customer segment", "and signed up in 2024?")
    assert signed.time_field["label"] == "Signup date" and not signed.unknown
    by_region = follow("net revenue in 2024 and 2025", "and by region?")
    assert (by_region.grain, labels(by_region.dimensions)) == ("year", ["Region name"])
    units = follow("how many tickets were opened in 2024", "same for units sold")
    assert units.time_field is None and labels(units.measures) == ["Units sold"]


def test_the_answer_names_the_date_it_counted_by():
    from services.agent.composing import qualifiers

    reading = read("net revenue from customers who signed up in 2024")
    assert qualifiers(reading, plan(reading, SLICE)) == " with signup date in 2024"


def test_a_near_spelling_is_taken_for_its_value_and_said():
    near = {**match("store", "orders", "channel"), "matched_text": "stroe", "approximate": True}
    reading = understand("average order value for stroe orders in 2024", SLICE, [near])
    assert [f.values for f in reading.filters] == [("store",)] and reading.assumed == [("stroe", "store")]
    catalog_word = {**match("high", "support_tickets", "priority"), "matched_text": "higher", "approximate": True}
    assert not understand("which channel has higher revenue", SLICE, [catalog_word]).filters


# --- scenes, the future, short forms -------------------------------------------------------------------------

def test_a_sentence_setting_the_scene_is_passed_over_only_when_it_holds_nothing():
    deck = read("I'm putting together a channel deck for Thursday - how did web stack up against store in 2024?")
    assert deck.split.values == ("web", "store") and not deck.unknown  # "channel" named in passing
    scene = read("I'm trying to understand whether enterprise accounts spend more. Compare the average order value "
                 "across the customer segments for last year")
    assert scene.unknown[0].startswith("I'm trying to understand whether")  # a value there: part of it or not?
    assert "say it in the question itself" in scene.reasons[scene.unknown[0]]
    joined = read("I joined in 2023. How many customers by customer segment?")
    assert joined.unknown == ["I joined in 2023"]
    future = read("I'm planning next season's buy. How did Apparel and Grocery compare on units sold in 2024?")
    assert future.asks_future  # the future is never passed over
    negated = read("I'm not counting web orders. Show revenue by region")
    assert negated.unknown  # a word that turns things around is never passed over


def test_the_future_is_refused_with_why_and_no_reading_is_offered():
    reading = read("What will our revenue be in Q1 2026?")
    assert reading.unknown == ["will"] and reading.reasons["will"].startswith("I report what the data holds")
    assert exact_reading(reading, SLICE, VALUES) is None
    assert read("forecast next year's revenue").unknown == ["forecast", "next year"]
    assert not read("will you show me revenue by month").unknown  # a request, not a forecast


def test_short_forms_fiscal_years_and_ranges_asked_for_a_change():
    mom = read("rev growth oct to nov 2025 mom %")
    assert (period(mom), mom.compare, mom.grain) == (
        ("between", dt.date(2025, 11, 1), dt.date(2025, 12, 1)), "previous_period", "month")
    fiscal = read("What was our YoY net revenue growth for FY2025?")
    assert period(fiscal) == ("between", dt.date(2025, 1, 1), dt.date(2026, 1, 1))
    assert fiscal.assumed == [("fy2025", "the calendar year 2025")]
    years = read("revenue growth from 2021 to 2025")  # the last against the first: not a change I measure
    assert years.unknown and "period just before" in years.reasons[years.unknown[0]]
    steps = read("How did revenue change from Q1 2024 to Q3 2024?")
    assert steps.unknown and "period just before" in steps.reasons[steps.unknown[0]]


def test_two_values_of_each_are_side_by_side_and_a_typical_order_divides():
    each = read("For 2024, break out cancelled and refunded orders - how many of each?")
    assert each.split.values == ("cancelled", "refunded") and not each.unknown
    typical = read("How many units does a typical order contain in 2025? average please")
    assert typical.per["label"] == "Order" and not typical.unknown


def test_a_typo_is_one_slip_from_a_catalog_word_never_another_english_word():
    assert labels(read("how many custmers registerd in 2023").measures) == ["Number of customers"]
    assert read("I just started here - which sales channel had the highest revenue back in 2021?").dimensions[0][
        "label"] == "Sales channel"  # "started" is no "state" (Order status)


# --- this period against the last, a share said once --------------------------------------------------------

def test_this_period_up_or_down_against_the_last_shows_both():
    reading = read("are support tickets up or down this quarter vs last quarter")
    assert reading.time.kind == "any" and reading.grain == "quarter" and reading.compare is None
    assert [(p.op, p.unit) for p in reading.time.parts] == [("previous", "quarter"), ("to_date", "quarter")]
    assert plan(reading, SLICE).draft["filter"] == {"any": [
        {"field": "fld_support_tickets.opened_at", "op": "previous", "unit": "quarter", "count": 1},
        {"field": "fld_support_tickets.opened_at", "op": "to_date", "unit": "quarter"}]}


def test_a_share_is_said_once():
    from services.agent.composing import subject

    reading = read("What percentage of the orders placed this year ended up cancelled?")
    said = subject(reading, plan(reading, SLICE))
    assert said.count("cancelled") == 1, said


# --- asides ------------------------------------------------------------------------------------------------

def test_an_aside_that_restricts_is_not_passed_over():
    assert read("revenue by month. just the big ones.").unknown == ["big"]
    assert read("Will it rain tomorrow?").unknown == ["will", "rain", "tomorrow"]  # no other sentence asks


def test_requests_to_change_and_the_future_in_plain_speech():
    from services.agent.understanding import CHANGE_VERBS

    assert CHANGE_VERBS.match("pls wipe all the cancelled orders from 2021")
    assert CHANGE_VERBS.match("could you please get rid of the test orders")
    assert read("what's revenue gonna look like in Q1 2026?").asks_future


def test_the_one_before_is_the_period_before():
    reading = read("are tickets going up or down?? last quarter vs the one before")
    assert (period(reading), reading.grain, reading.unknown) == (("relative", "previous", "quarter", 2), "quarter", [])


# --- words that change meaning, typos, follow-ups ------------------------------------------------------------

@pytest.mark.parametrize("question", [
    "Revenue for every channel but web", "Revenue by month with store excluded", "Revenue by month, leaving out web",
    "How much did enterprise customers spend in 2024", "How many customers came back in 2024",
    "Revenue as of March 2024", "Revenue from small orders in 2024", "Number of lost customers in 2024",
    "Revenue from safe products", "Total value of orders in 2024", "Number of first orders in 2024",
    "I'm leaving out France. Revenue by month", "I am only looking at large orders. How many orders in 2024?",
    "How many orders are on hold",
])
def test_words_that_change_meaning_are_never_passed_over(question):
    assert read(question).unknown, question


def test_short_forms_of_periods_only_beside_a_change():
    assert read("Wow, revenue by month").compare is None
    assert read("revenue growth wow").compare_grain == "week"


def test_a_quarter_of_a_fiscal_year():
    reading = read("Revenue in Q3 FY24")
    assert period(reading) == ("between", dt.date(2024, 7, 1), dt.date(2024, 10, 1))
    assert reading.assumed == [("fy2024", "the calendar year 2024")]


def test_a_follow_up_naming_another_measure_changes_it():
    later = follow("Net revenue by month", "and tickets for enterprise customers?")
    assert labels(later.measures) == ["Number of support tickets"]


def test_personal_data_is_refused_even_beside_a_value_of_the_same_word():
    assert read("Phone numbers for phone orders in 2024").personal


def test_a_scene_whose_value_the_question_says_again_is_passed_over():
    reading = read("I keep hearing online is taking over. How has the share of orders coming through the web "
                   "changed each year?")
    assert reading.share.values == ("web",) and reading.grain == "year" and not reading.unknown
    alone = read("I keep hearing web is beating store. Revenue by month")
    assert alone.unknown and "say it in the question itself" in alone.reasons[alone.unknown[0]]


@pytest.mark.parametrize("question", [
    "I just started here - which sales channel had the highest revenue back in 2021?",
    "same thing but by units sold",
    "how many tickets have we got marked as resolved?",
    "On average, how many units does a customer buy in a single order?",
])
def test_plain_speech_after_the_review(question):
    earlier = read("net revenue by product category")
    reading = understand(question, SLICE, VALUES + [{**match("solved", "support_tickets", "status"),
                                                     "matched_text": "resolved"}], earlier)
    assert reading.measures and not reading.unknown, reading.unknown


def test_a_verb_about_other_rows_offers_no_reading():
    reading = read("How many customers bought something in 2024, by month")  # each counted in many months
    assert reading.unknown == ["bought"] and reading.asks_other_rows
    assert exact_reading(reading, SLICE, VALUES) is None
    new = read("how many new customers")
    assert new.reasons["new"].startswith("say when")


# --- framings, chat shorthand, who did it, and follow-ups (issue 40, third round) --------------------------------

LATEST = dt.date(2025, 12, 31)  # what "now" is in the demo data

@pytest.mark.parametrize(("question", "measure"), [
    ("For the channel review: how did online sales stack up against in-store sales in 2024?", "Net revenue"),
    ("Finance wants to know: what was the net revenue on orders that ended up refunded in 2024?", "Net revenue"),
    ("Returns desk here. How many units did customers send back in Q2 2025?", "Returned units"),
    ("Category management question - what is the average list price of Apparel products?", "Average list price"),
    ("for friday's pipeline call: top 5 products by sales last quarter", "Net revenue"),
    ("For the board pack, I need this year's net revenue broken down by product category.", "Net revenue"),
    ("For the board deck I need net revenue per year", "Net revenue"),
])
def test_a_framing_before_the_question_is_passed_over(question, measure):
    reading = read(question)
    assert labels(reading.measures) == [measure] and not reading.unknown, reading.unknown


@pytest.mark.parametrize("question", [
    "Channel deep dive: revenue in 2024",  # the field it names is named nowhere else: maybe a breakdown
    "Web review: revenue in 2024",  # a value
    "Top sellers review: revenue by product",  # a ranking word
    "Not web: revenue in 2024",  # a negation
])
def test_a_framing_that_may_say_what_to_count_is_not_passed_over(question):
    assert read(question).unknown, question  # its words stay unexplained: refused, never dropped


def test_a_framing_naming_a_period_is_read_as_part_of_the_question():
    reading = read("2024 review: revenue by channel")
    assert period(reading) == ("between", dt.date(2024, 1, 1), dt.date(2025, 1, 1))


def test_chat_shorthand():
    assert labels(read("how many units got sent back last qtr").measures) == ["Returned units"]
    assert period(read("how many units got sent back last qtr")) == ("relative", "previous", "quarter", 1)
    assert not read("how many high tix were logged this yr").unknown
    assert read("return rate by dept, highest first").dimensions[0]["label"] == "Product category"
    assert read("return rate by dept, lowest first").direction == "asc"
    assert not read("how many customers r small business").unknown


def test_an_event_said_as_a_noun_counts_its_rows():
    reading = read("new sign-ups by month so far this year")
    assert labels(reading.measures) == ["Number of customers"] and reading.grain == "month"
    assert reading.time_field["label"] == "Signup date" and not reading.unknown


@pytest.mark.parametrize("question", [
    "How many units were sent back by customers last quarter?",
    "what are the two most common reasons people send stuff back?",
])
def test_who_did_it_is_not_what_is_counted_or_grouped(question):
    reading = read(question)
    assert not reading.dimensions or reading.dimensions[0]["label"] == "Return reason"
    assert labels(reading.measures) in (["Returned units"], ["Number of returns"]) and not reading.unknown


def test_what_is_counted_is_never_taken_for_who_did_it():
    reading = read("how many customers placed orders in 2024")  # customers with at least one order then
    assert labels(reading.measures) == ["Number of customers"] and reading.has_rows["id"] == "ent_orders"
    assert not reading.unknown


def test_a_follow_up_set_against_another_period_keeps_the_earlier_one():
    growth = follow("Could you please pull our total net revenue for last year?",
                    "And how does that compare with 2023? Please give me the year-over-year growth rate.", LATEST)
    assert (period(growth), growth.compare, growth.grain) == (
        ("between", dt.date(2024, 1, 1), dt.date(2025, 1, 1)), "previous_period", "year")
    both = follow("revenue by region last year", "how does that compare with 2023?", LATEST)
    assert period(both) == ("between", dt.date(2023, 1, 1), dt.date(2025, 1, 1)) and labels(both.dimensions) == [
        "Region name"]


def test_a_follow_up_that_changes_that():
    switched = follow("For the board pack, I need this year's net revenue broken down by product category.",
                      "Thanks. Could you switch that to units sold instead, keeping the same categories and year?")
    assert labels(switched.measures) == ["Units sold"] and labels(switched.dimensions) == ["Product category"]
    assert switched.time.op == "to_date" and not switched.unknown


def test_growth_for_each_period_of_a_range():
    each = read("What was the year-over-year growth rate in the number of orders for each year from 2022 through 2025?")
    assert (period(each), each.compare, each.grain) == (
        ("between", dt.date(2022, 1, 1), dt.date(2026, 1, 1)), "previous_period", "year")
    ends = read("revenue growth from 2023 to 2025")
    assert ends.unknown  # the first against the last: not next to each other


def test_a_grain_said_twice_is_one_grain():
    assert not read("Please show the monthy number of orders placed in 2025, month by month.").unknown
    assert read("weekly orders by month in 2025").unknown == ["weekly"]


def test_volume_of_rows_without_a_quantity_is_how_many():
    assert labels(read("support ticket volume last quarter").measures) == ["Number of support tickets"]
    assert "volume" in read("product volume in 2024").unknown  # units sold or products: not guessed


@pytest.mark.parametrize(("question", "start", "end"), [
    ("sales between march 1 and may 15 this year?", dt.date(2025, 3, 1), dt.date(2025, 5, 16)),
    ("revenue from the 1st of march to the 15th of may 2024", dt.date(2024, 3, 1), dt.date(2024, 5, 16)),
    ("orders from 2024-01-01 to 2024-06-30", dt.date(2024, 1, 1), dt.date(2024, 7, 1)),
    ("orders from dec 1 to jan 15 2025", dt.date(2024, 12, 1), dt.date(2025, 1, 16)),
    ("orders on march 3rd 2025", dt.date(2025, 3, 3), dt.date(2025, 3, 4)),
    ("revenue from march to may", dt.date(2025, 3, 1), dt.date(2025, 6, 1)),  # (no year: once "now" is known)
    ("revenue q3 last year", dt.date(2024, 7, 1), dt.date(2024, 10, 1)),
])
def test_days_and_periods_with_their_year_said_after(question, start, end):
    assert read(question).needs_latest or read(question).time.kind == "between"
    reading = read(question, LATEST)
    assert (period(reading), reading.unknown) == (("between", start, end), [])


def test_a_day_no_month_has_is_not_a_day():
    assert "30" in read("orders on feb 30 2025", LATEST).unknown


@pytest.mark.parametrize("question", [
    "order count where channel = web, last qtr",
    "sum of units returned in 2025 by reason, desc",
    "# custs signed up in 2025 grouped by segment",
    "How many store orders did we get this month?",
    "Can you give me the net revenue for 2024 and for 2025, each year separate?",
    "Give me please the return rate for each product category, over all the years.",
    "Please count me the orders from 1st of June until 15th of August 2024, both days included.",
    "Which part of the orders in year 2025 was cancelled?",
])
def test_an_analysts_and_a_second_language_words(question):
    reading = read(question, LATEST)
    assert reading.measures and not reading.unknown, reading.unknown


def test_follow_ups_in_other_words():
    pivot = follow("orders in 2024", "now pivot by channel")
    assert labels(pivot.dimensions) == ["Sales channel"] and not pivot.unknown
    narrowed = follow("top 5 products by revenue", "same but filter to Apparel")
    assert [f.values for f in narrowed.filters] == [("Apparel",)] and not narrowed.unknown
    same_year = follow("orders in 2023", "And how it looks for store, same year?")
    assert period(same_year) == ("between", dt.date(2023, 1, 1), dt.date(2024, 1, 1)) and not same_year.unknown
    month = follow("orders by month in 2025", "And which one of these months had the most orders?")
    assert (month.grain, month.direction, month.limit, month.unknown) == ("month", "desc", None, [])
    assert read("revenue this month vs the same month last year").compare == "same_period_last_year"


def test_a_value_spelled_the_other_way_is_that_value():
    canceled = {**match("cancelled", "orders", "status"), "matched_text": "canceled", "approximate": True}
    reading = understand("What share of orders got canceled this year?", SLICE, [canceled])
    assert reading.share.values == ("cancelled",) and not reading.unknown
    later = {**match("latter", "orders", "status"), "matched_text": "later", "approximate": True}
    assert not understand("orders placed later", SLICE, [later]).filters  # another word, not a spelling


def test_name_is_personal_unless_it_is_the_name_of_rows_shown():
    products = read("Which are the 5 products with biggest net revenue in 2025? Name and revenue, please.")
    assert (products.limit, products.personal, products.unknown) == (5, [], [])
    assert read("customer names in Canada").personal
    assert read("top products and their customers' names").personal
    assert read("top 5 customers by revenue with their names").personal


def test_a_value_ruled_out_beside_the_one_kept_says_nothing_more():
    only = understand("How many support tickets are in status open at this moment? Only open, not pending.", SLICE,
                      VALUES + [match("pending", "support_tickets", "status")])
    assert [f.values for f in only.filters] == [("open",)] and not only.unknown
    assert read("revenue not from web").unknown == ["not"]  # ruled out alone: turned around, never dropped


def test_a_second_question_naming_a_value_is_asked_on_its_own():
    reading = read("How many support tickets did we get this year, and how many were high?")
    assert reading.unknown == ["and how many were high"] and not reading.filters
    assert "one question at a time" in reading.reasons["and how many were high"]
    assert exact_reading(reading, SLICE, VALUES) is None
    both = read("how many orders and how many units in 2024?")  # two measures of the same rows
    assert labels(both.measures) == ["Number of orders", "Units sold"] and not both.unknown


def test_grew_fastest_ranks_by_growth():
    reading = read("Which product category grew revenue fastest from 2024 to 2025?")
    assert (reading.ranks_change, reading.direction, reading.compare) == (True, "desc", "previous_period")
    drafted = plan(reading, SLICE)
    assert drafted.draft["order_by"] == [{"output": "growth", "direction": "desc"}]
    assert "fastest" in read("fastest shipping region").unknown  # no growth asked: not understood


def test_a_follow_up_naming_whose_rows_through_where_they_are_keeps_the_measure():
    canadian = {**match("Canada", "regions", "country"), "matched_text": "canadian"}
    later = understand("same, canadian custs only", SLICE, [canadian], read("revenue by region in 2025, highest first"))
    assert labels(later.measures) == ["Net revenue"] and [f.values for f in later.filters] == [("Canada",)]


def test_an_impression_beside_the_question_is_passed_over_unless_it_names_a_value():
    assert not read("how many tickets got logged last month? felt busy").unknown
    assert read("revenue by month. seems low for web.").unknown[0] == "seems low for web"


# --- chat around a question, and practice sets X, Y and Z -----------------------------------------------------

@pytest.mark.parametrize("question", [
    "hey! quick q — what's our total revenue this year so far? thx 🙏",
    "hi all 👋 not sure if this is possible but could I get the number of orders by sales channel for this year? "
    "no rush",
    "hey team 👋 how many new customers signed up this year? 🎉",
    "support asked me this one: how many high priority tickets were opened this year? lmk 🙏",
    "hey, what was revenue from web orders in 2025? not sure if we track that by channel but worth a shot",
    "top 3 regions by reveune last year pls 🙏 need it for the QBR",
    "quick sanity check, how many support tickets are open? all time, not just this year",
    "hey, can you show return rate by product category, highest first? I think apparel is the worst but want to "
    "double check before I say it in standup 😅",
    "which 3 subcategories sold the most units in 2024? by units not revenue, lmk 🙏",
])
def test_chat_around_a_question_changes_nothing(question):
    reading = read(question)
    assert reading.measures and not reading.unknown and not reading.personal, reading.unknown


def test_an_aside_naming_values_is_passed_over_only_when_each_is_shown_on_its_own_row():
    shown = read("return rate by product category. I think apparel is the worst.")
    assert labels(shown.dimensions) == ["Product category"] and not shown.filters and shown.direction is None
    alone = read("return rate. I think apparel is the worst.")
    assert alone.unknown and alone.unknown[0] == "I think apparel is the worst"
    assert not read("I'm putting together a channel deck - revenue by month").dimensions  # named in passing
    assert read("Is the web channel's share of revenue growing? Show it per year").grain == "year"


@pytest.mark.parametrize("question", [
    "Move all our Québec customers into the enterprise segment",
    "hey, can you reassign the open tickets to high priority?",
    "pls flag the cancelled orders from 2021",
])
def test_orders_to_change_data_in_other_words(question):
    from services.agent.understanding import asks_to_change

    assert asks_to_change(question)


def test_asking_is_not_an_order_to_change():
    from services.agent.understanding import asks_to_change

    assert not asks_to_change("hey, how many orders moved to cancelled in 2024?")
    assert not asks_to_change("what changed in revenue last year?")


def test_words_of_a_merchandiser_and_a_marketer():
    assert labels(read("Which regional market had the most new signups in 2025?").dimensions) == ["Region name"]
    assert labels(read("Which regional market had the most new signups in 2025?").measures) == ["Number of customers"]
    assert labels(read("how many untis of apparel did we sell in 2024").measures) == ["Units sold"]
    markdown = read("What was the average markdown rate per order line in Apparel in 2025?")
    assert labels(markdown.measures) == ["Average discount rate"] and not markdown.unknown
    smb = read("Which 3 categories did small business customers buy the most units of in 2025?")
    assert (labels(smb.measures), smb.limit, smb.unknown) == (["Units sold"], 3, [])
    assert read("How many new orders in 2024?").unknown == ["new"]  # a signup is not the date orders count by
    mix = read("What was the channel mix of our 2025 orders?")
    assert mix.share_of_total and labels(mix.dimensions) == ["Sales channel"] and not mix.unknown
    that_year = follow("units sold by category in 2024", "Rank the subcategories by units sold that year.")
    assert period(that_year) == ("between", dt.date(2024, 1, 1), dt.date(2025, 1, 1)) and not that_year.unknown
    its = follow("units sold by category in 2024", "Rank its subcategories by units sold that year.")
    assert its.unknown == ["its"]  # one row of the earlier answer, which the planner never sees
    assert read("Rank the subcategories by units sold that year.").unknown == ["year"]  # no earlier year


def test_a_measure_ruled_out_beside_another_is_said_only_to_be_plain():
    assert labels(read("revenue by month, not orders").measures) == ["Net revenue"]
    assert read("not revenue").unknown == ["not revenue"]
    assert read("orders not from web").unknown == ["not"]


# --- fresh sets E and F (first passes recorded before these) --------------------------------------------------

def test_a_reporter_or_a_deck_before_the_question_is_framing():
    finance = read("Hi! Finance is asking how many units customers sent back in November 2025. Can you pull that?")
    assert labels(finance.measures) == ["Returned units"] and not finance.unknown
    deck = read("Quick one for a deck I'm doing: did online or store bring in more sales in 2025?")
    assert deck.split.values == ("web", "store") and not deck.unknown


def test_compared_with_the_same_period_last_year_shows_both():
    reading = read("How did our number of orders last quarter compare with the same quarter last year?", LATEST)
    assert reading.time.kind == "any" and reading.grain == "quarter" and reading.compare is None
    assert [(p.start, p.end) for p in reading.time.parts] == [(dt.date(2024, 7, 1), dt.date(2024, 10, 1)),
                                                              (dt.date(2025, 7, 1), dt.date(2025, 10, 1))]
    assert read("How did our number of orders last quarter compare with the same quarter last year?").needs_latest


def test_most_common_counts_rows():
    reading = read("What was the most common reason for returns in 2024?")
    assert labels(reading.measures) == ["Number of returns"] and labels(reading.dimensions) == ["Return reason"]


def test_grew_the_most_ranks_by_growth():
    later = follow("Can you break down this year's revenue by product category?",
                   "which one grew the most compared to last year?")
    assert (later.ranks_change, later.direction, later.compare) == (True, "desc", "same_period_last_year")
    assert plan(later, SLICE).draft["order_by"] == [{"output": "growth", "direction": "desc"}]


@pytest.mark.parametrize(("question", "start", "end"), [
    ("orders in the first half of 2025", dt.date(2025, 1, 1), dt.date(2025, 7, 1)),
    ("revenue H2 2024", dt.date(2024, 7, 1), dt.date(2025, 1, 1)),
])
def test_halves_of_a_year(question, start, end):
    assert period(read(question)) == ("between", start, end)


# --- a third review: never the opposite question, never a crash, linear -------------------------------------------

@pytest.mark.parametrize("question", [
    "how many orders excluding cancelled and refunded ones in 2024",
    "revenue except web and phone in 2024",
    "orders not cancelled or refunded in 2024",
    "how many orders in 2024, cancelled included?",
    "revenue by channel in 2024, take web out of it",
    "For Europe, revenue by channel in 2024",
    "Weekends: how many orders in 2024?",
    "Premium products - revenue by category in 2024",
    "Where are our customers?",
    "What is the range of revenue across regions in 2024?",
    "which region had the highest first-quarter revenue in 2024",
])
def test_words_that_turn_or_restrict_the_question_are_never_dropped(question):
    reading = read(question)
    assert reading.unknown or reading.personal, reading


def test_a_value_ruled_out_joined_to_another_is_ruled_out_too():
    reading = understand("orders from web and not store or phone in 2024", SLICE, VALUES)
    assert [f.values for f in reading.filters] == [("web",)] and not reading.unknown


def test_declined_fastest_ranks_the_biggest_fall_first():
    reading = read("which category's revenue declined fastest in 2025")
    assert (reading.ranks_change, reading.direction) == (True, "asc")


def test_a_new_question_is_not_a_follow_up_for_saying_this():
    later = follow("how many web orders in 2024", "Show this year's revenue by region")
    assert not later.follow_up and not later.filters
    compared = follow("how many web orders in 2022", "revenue in 2025 vs 2024 by channel")
    assert period(compared) == ("between", dt.date(2024, 1, 1), dt.date(2026, 1, 1))


def test_the_previous_period_of_a_follow_up_is_the_one_before_the_earlier():
    later = follow("revenue in 2024 by channel", "how does that compare to the previous year?")
    assert period(later) == ("between", dt.date(2023, 1, 1), dt.date(2025, 1, 1)) and later.grain == "year"


def test_keeping_the_same_never_swallows_what_follows():
    later = follow("revenue by channel in 2024", "keeping the same dates excluding phone, by region")
    assert "excluding" in later.unknown


def test_a_count_before_of_a_month_is_no_day():
    reading = read("top 10 of june 2025 products by revenue")
    assert reading.limit == 10 and period(reading) == ("between", dt.date(2025, 6, 1), dt.date(2025, 7, 1))


def test_who_is_counted_or_grouped_is_never_taken_for_who_did_it():
    assert read("total customers placing orders in 2024").has_rows["id"] == "ent_orders"
    assert read("orders placed by customer in 2024").unknown == ["customer"]


@pytest.mark.parametrize("question", ["orders from dec 31 to jan 1 1900", "orders from march 1 to jan 1 1900"])
def test_years_out_of_range_are_no_crash(question):
    read(question, LATEST)


@pytest.mark.parametrize("question", ["revenue in " + "q1 - " * 300 + "q2", "march & " * 250, "names " * 330,
                                      "more " * 400 + "by how much"])
def test_long_lists_stay_linear(question):
    started = time.perf_counter()
    understand(question[:2000], SLICE, VALUES)
    assert time.perf_counter() - started < 1.0


def test_a_range_ending_without_its_year_ends_after_it_starts():
    assert period(read("orders from march 2024 to may")) == ("between", dt.date(2024, 3, 1), dt.date(2024, 6, 1))
    assert period(read("orders from november 2025 to january")) == (
        "between", dt.date(2025, 11, 1), dt.date(2026, 2, 1))


def test_previous_n_quarters_are_whole_ones_before_this_one():
    assert period(read("revenue in the previous 2 quarters")) == ("relative", "previous", "quarter", 2)
    assert period(read("revenue in the last 3 months")) == ("relative", "trailing", "month", 3)


def test_an_analysts_where_keeps_the_words_around_it_apart():
    reading = understand("count orders where status = cancelled, 2025", SLICE, VALUES)
    assert labels(reading.measures) == ["Number of orders"] and [f.values for f in reading.filters] == [("cancelled",)]


# --- rows had, the period before the earlier one, running totals, change as an amount (issue 40, fourth round) ---

@pytest.mark.parametrize(("question", "inside"), [
    ("how many customers bought something this year?", [{"field": "fld_orders.ordered_at", "op": "to_date",
                                                          "unit": "year"}]),
    ("number of customers who ordered online in 2024", [
        {"field": "fld_orders.channel", "op": "eq", "value": "web"},
        {"all": [{"field": "fld_orders.ordered_at", "op": "gte", "value": "2024-01-01T00:00:00"},
                 {"field": "fld_orders.ordered_at", "op": "lt", "value": "2025-01-01T00:00:00"}]}]),
])
def test_records_counted_by_rows_they_had_in_a_period(question, inside):
    from services.agent.composing import qualifiers

    reading = read(question, LATEST)
    drafted = plan(reading, SLICE)
    assert reading.has_rows["id"] == "ent_orders" and not reading.unknown
    assert drafted.draft["measures"] == [{"id": "m0", "metric": "met_customers.customer_count"}]
    assert drafted.draft["filter"] == {"has": inside[0] if len(inside) == 1 else {"all": inside}}
    assert "with at least one order" in qualifiers(reading, drafted)


def test_rows_had_over_time_and_a_measure_of_those_rows_are_not_read_so():
    assert read("How many customers bought something in 2024, by month").has_rows is None
    returned = read("how many units were returned in 2024")  # the verb's own measure, not units sold
    assert returned.has_rows is None and returned.measures[0]["id"] == "met_returns.returned_units"
    signed = read("net revenue from customers who signed up in 2024")  # a date the measure's rows reach
    assert signed.has_rows is None and signed.time_field["id"] == "fld_customers.signup_date"


@pytest.mark.parametrize(("earlier", "follow_up", "start", "end"), [
    ("web vs in-store revenue in 2025", "what about the year before?", dt.date(2024, 1, 1), dt.date(2025, 1, 1)),
    ("revenue in Q3 2025", "and the quarter before?", dt.date(2025, 4, 1), dt.date(2025, 7, 1)),
    ("revenue last month", "and the month before that?", dt.date(2025, 10, 1), dt.date(2025, 11, 1)),
    ("orders in 2022", "what about the previous year", dt.date(2021, 1, 1), dt.date(2022, 1, 1)),
])
def test_the_one_before_in_a_follow_up_is_before_the_earlier_period(earlier, follow_up, start, end):
    reading = understand(follow_up, SLICE, VALUES, earlier=read(earlier, LATEST), latest=LATEST)
    assert (period(reading), reading.unknown) == (("between", start, end), [])


@pytest.mark.parametrize("question", ["running total of revenue month by month for 2025",
                                      "cumulative net revenue in 2025", "revenue in 2025, cumulative"])
def test_a_running_total_runs_along_time(question):
    drafted = plan(read(question), SLICE)
    assert drafted.draft["calculations"] == [{"id": "cumulative", "kind": "cumulative", "of": "m0"}]
    assert drafted.primary == "cumulative" and drafted.draft["dimensions"][0]["grain"] == "month"


def test_a_running_total_of_an_average_is_refused_in_words():
    with pytest.raises(CannotPlan, match="does not add up"):
        plan(read("running total of average order value by month"), SLICE)


def test_a_change_is_shown_as_an_amount_and_a_rate():
    drafted = plan(read("how did revenue change month over month over the last 6 months"), SLICE)
    assert [c["kind"] for c in drafted.draft["calculations"]] == ["prior", "change", "growth"]


@pytest.mark.parametrize(("question", "unknown"), [("top 5 best sellng products by units", []),
                                                    ("top 5 best-sellling products by units", []),
                                                    ("top 5 products by units in zorbland", ["zorbland"])])
def test_a_near_spelling_of_a_word_that_counts_nothing_is_passed_over(question, unknown):
    assert read(question).unknown == unknown


# --- fifth round: from fresh sets I and J (written to avoid the obvious wording) ---------------------------------

def test_hyphenated_qualifiers_and_possessives_reach_the_value_match():
    from services.agent.understanding import spaced_for_values

    spaced = spaced_for_values("how many high-priority cases; apparel's return rate; non-cancelled orders from "
                               "third-party sellers", SLICE)
    assert spaced == ("how many high priority cases; apparel return rate; non-cancelled orders from third-party "
                      "sellers")


def test_values_said_with_a_possessive_are_set_against_each_other():
    reading = read("How does apparel's return rate compare with grocery's?")
    assert reading.split.values == ("Apparel", "Grocery") and labels(reading.measures) == ["Return rate"]
    assert not reading.unknown


@pytest.mark.parametrize(("question", "measures"), [
    ("gross vs net revenue for 2024 pls", ["Net revenue", "Gross revenue"]),
    ("how much did we take in through the web last quarter?", ["Net revenue"]),
])
def test_measures_set_against_each_other_or_said_as_money(question, measures):
    reading = read(question, LATEST)
    assert labels(reading.measures) == measures and not reading.unknown


def test_up_or_down_between_two_named_periods_shows_both():
    reading = read("did order volume go up or down from Q2 to Q3 this year?", LATEST)
    assert (period(reading), reading.grain, reading.compare, reading.unknown) == (
        ("between", dt.date(2025, 4, 1), dt.date(2025, 10, 1)), "quarter", None, [])


def test_a_change_asked_as_a_percent_or_said_twice_is_one_change():
    percent = read("how much did net sales grow in 2025 over 2024, as a %", LATEST)
    assert percent.compare == "previous_period" and not percent.unknown
    twice = read("Month over month, how did order volume move across the second half of 2025? I want the % "
                 "change each month", LATEST)
    assert (twice.compare, twice.grain, twice.unknown) == ("previous_period", "month", [])


def test_the_same_question_asked_again_of_another_value_is_one_comparison():
    reading = read("how many orders did enterprise accounts place last year, and how many did the small business "
                   "accounts place?", LATEST)
    assert reading.split.values == ("enterprise", "small_business") and not reading.unknown
    other = read("how many orders did enterprise accounts place last year, and how many were cancelled?", LATEST)
    assert other.unknown == ["and how many were cancelled"]  # another question: asked on its own
    both = follow("how many orders did enterprise accounts place last year, and how many did the small "
                  "business accounts place?", "and what was the average order value for each of those two?", LATEST)
    assert labels(both.measures) == ["Average order value"] and both.split.values == (
        "enterprise", "small_business") and not both.unknown


@pytest.mark.parametrize("question", ["revenue by channel for web and store",
                                      "orders per customer, broken down by segment (enterprise / small business)"])
def test_a_breakdown_keeps_its_field_when_values_of_it_are_listed(question):
    reading = read(question)
    assert len(reading.dimensions) == 1 and reading.filters and not reading.unknown


def test_a_value_set_against_the_earlier_one_in_a_follow_up_is_shown_beside_it():
    reading = follow("revenue from web in 2024", "ok, and how does that stack up against store?", LATEST)
    assert reading.split.values == ("web", "store") and not reading.filters and not reading.unknown
    now = follow("revenue from web in 2024", "now store", LATEST)
    assert now.split is None and [f.values for f in now.filters] == [("store",)]


@pytest.mark.parametrize(("question", "start"), [("running total of revenue month by month through 2025", 2025),
                                                  ("orders by month throughout 2024", 2024)])
def test_through_a_year_alone_is_that_year(question, start):
    assert period(read(question))[1] == dt.date(start, 1, 1)


@pytest.mark.parametrize("question", ["how many support tickets are still open atm, all together?",
                                      "for apparel, rank the reasons ppl send stuff back by how many returns",
                                      "How many unique custmers placed at least one order in Q4 2025?"])
def test_chat_shorthand_and_existence_words_are_read(question):
    assert read(question, LATEST).unknown == []


def test_a_ticket_search_is_only_a_search_said_as_one():
    from services.agent.embedded_planner import _SEARCH_TICKETS

    assert _SEARCH_TICKETS.search("how many tickets mention late delivery").group(1) == "late delivery"
    assert _SEARCH_TICKETS.search("pull up what customers wrote in their tickets about late deliveries") is None


@pytest.mark.parametrize(("question", "direction"), [
    ("Return rate for each department, worst first", "desc"),  # lower is better: the worst have the highest
    ("which category has the best return rate", "asc"),
    ("worst 3 regions by net revenue", "asc"),  # higher is better
    ("top 3 best sellers by units", "desc"),
])
def test_best_and_worst_follow_which_way_the_model_says_is_better(question, direction):
    assert read(question).direction == direction


def test_money_spent_with_us_and_orders_taken_over_the_phone():
    spend = read("Enterprise vs small business - who spent more with us in 2025?")  # money: the demo's revenue
    assert labels(spend.measures) == ["Net revenue"] and spend.split.values == ("enterprise", "small_business")
    assert not spend.unknown
    assert read("how much did we spend in 2024?").unknown  # the business's spending: not revenue
    taken = read("how many orders did we take over the phone last quarter?", LATEST)
    assert [f.values for f in taken.filters] == [("phone",)] and not taken.unknown


# --- sixth round: from fresh sets K and L ------------------------------------------------------------------------

@pytest.mark.parametrize("question", ["Month-by-month count of web orders for this year?",
                                      "orders this year, quarter-by-quarter"])
def test_a_hyphenated_grain_is_a_grain(question):
    assert read(question, LATEST).grain in ("month", "quarter")


def test_went_down_between_two_periods_shows_both_and_how_much_shows_the_change():
    down = read("did store sales go down between 2023 and 2024?", LATEST)
    assert (period(down), down.grain, down.compare) == (("between", dt.date(2023, 1, 1), dt.date(2025, 1, 1)),
                                                        "year", None)
    how_much = read("how much did revenue go up in 2025", LATEST)
    assert how_much.compare == "previous_period" and period(how_much)[1] == dt.date(2025, 1, 1)


def test_year_over_year_for_each_quarter_of_two_years_keeps_both_years():
    reading = read("show me revenue by quarter for 2024 and 2025, with YoY growth for each quarter", LATEST)
    assert (period(reading), reading.grain, reading.compare) == (
        ("between", dt.date(2024, 1, 1), dt.date(2026, 1, 1)), "quarter", "same_period_last_year")


@pytest.mark.parametrize(("question", "limit", "unknown"), [
    ("what are the 3 reasons behind the most returned units", 3, []),
    ("top 5 products by units sold in 2025, biggest frist", 5, []),
])
def test_a_count_before_the_ranked_rows_and_a_typo_in_the_order(question, limit, unknown):
    reading = read(question, LATEST)
    assert (reading.limit, reading.direction, reading.unknown) == (limit, "desc", unknown)


def test_from_a_year_onwards_is_since_then():
    reading = read("new customer sign-ups per year, 2021 onwards")
    assert (reading.time.kind, reading.time.start, reading.grain) == ("since", dt.date(2021, 1, 1), "year")


def test_how_many_of_a_value_counts_the_rows_it_is_said_of():
    reading = understand("how many small businesses joined us this year so far", SLICE,
                         [{**match("small_business", "customers", "segment"), "matched_text": "small businesses"}],
                         latest=LATEST)
    assert labels(reading.measures) == ["Number of customers"] and reading.time_field["id"] == \
        "fld_customers.signup_date" and not reading.unknown


def test_the_rows_counted_are_those_after_the_most():
    reading = read("in which quarter of 2025 did customers from Canada place the most orders?", LATEST)
    assert labels(reading.measures) == ["Number of orders"] and reading.grain == "quarter" and not reading.unknown


def test_records_that_ever_had_such_a_row():
    reading = read("how many distinct customers have ever ordered through the marketplace?")
    drafted = plan(reading, SLICE)
    assert drafted.draft["filter"] == {"has": {"field": "fld_orders.channel", "op": "eq", "value": "marketplace"}}


def test_what_does_that_look_like_is_a_follow_up():
    reading = follow("Could I get a month-by-month count of orders for this year so far?",
                            "what does that look like for web orders only?", LATEST)
    assert reading.grain == "month" and [f.values for f in reading.filters] == [("web",)]


# --- readings that must not come back: words it cannot place are refused, not guessed ----------------------------

@pytest.mark.parametrize("question", [
    "how many customers ordered both online and in store?",  # one order of each: not read
    "how many support tickets are stuck?", "how many regular customers do we have?",
    "which channel has the fewset orders?", "percnet of revenue by channel", "how many uniqe customers ordered online?",
    "how many customers who signed up in 2024 bought online?",  # two dates: whose is the period?
    "how many web orders were cancelled, and how many store orders were refunded?",
    "how many orders were placed in 2023 and later cancelled?", "total revenue through 2024",
    "how much did we spend in 2024?", "how many apparel were returned in 2024?",
])
def test_questions_with_words_it_cannot_place_are_refused_not_misread(question):
    reading = read(question, LATEST)
    refused = bool(reading.unknown or reading.personal)
    if not refused:
        with pytest.raises(CannotPlan):
            plan(reading, SLICE)


def test_the_n_things_is_a_limit_not_a_reference_back():
    reading = follow("revenue by channel in 2024", "what are the three categories with the most returned units?",
                     LATEST)
    assert reading.limit == 3 and reading.time is None and not reading.period_kept


def test_a_new_question_about_the_same_records_keeps_the_conversation_period():
    reading = follow("What percentage of the orders placed this year were cancelled?",
                     "which channel had the most cancellations?", LATEST)
    assert reading.time is not None and reading.time.words == "this year" and reading.period_kept
    own = follow("What percentage of the orders placed this year were cancelled?",
                 "which channel had the most cancellations in 2023?", LATEST)
    assert own.time.start == dt.date(2023, 1, 1) and not own.period_kept


def test_take_in_is_money_only_when_nothing_else_is_taken_in():
    assert labels(read("how many orders did we take in 2024?", LATEST).measures) == ["Number of orders"]
    assert labels(read("how much did we take in last year", LATEST).measures) == ["Net revenue"]


def test_comparing_words_stay_for_what_they_compare():
    periods = follow("revenue in 2024", "how does that compare with 2023, web only?", LATEST)
    assert (period(periods), periods.grain, [f.values for f in periods.filters], periods.split, periods.unknown) == (
        ("between", dt.date(2023, 1, 1), dt.date(2025, 1, 1)), "year", [("web",)], None, [])
    another_field = follow("web revenue in 2024", "how does that stack up against France?", LATEST)
    assert another_field.unknown and another_field.split is None  # France is no channel: not set beside web


@pytest.mark.parametrize(("question", "direction"), [
    ("which 3 categories have the highest return rate - the worst?", "desc"),
    ("top 5 categories by return rate, worst first", "desc"),
])
def test_best_or_worst_beside_another_order_word_does_not_turn_it(question, direction):
    assert read(question).direction == direction


def test_best_or_worst_in_a_follow_up_without_an_order_of_its_own_leaves_the_order():
    reading = follow("top 3 categories by return rate in 2025", "and was it better in 2024?", LATEST)
    assert reading.direction == "desc"


def test_a_follow_up_asking_another_measure_drops_the_rows_had():
    reading = follow("how many customers bought online?", "what about revenue?", LATEST)
    drafted = plan(reading, SLICE)
    assert reading.has_rows is None and labels(reading.measures) == ["Net revenue"]
    assert drafted.draft["filter"] == {"field": "fld_orders.channel", "op": "eq", "value": "web"}


def test_a_follow_up_narrowing_rows_had_to_a_period_dates_those_rows():
    reading = follow("how many customers bought online?", "and in 2024?", LATEST)
    condition = plan(reading, SLICE).draft["filter"]["has"]["all"]
    assert condition[0] == {"field": "fld_orders.channel", "op": "eq", "value": "web"}
    assert condition[1]["all"][0]["field"] == "fld_orders.ordered_at"


@pytest.mark.parametrize("question", ["cumulative revenue growth by month in 2024",
                                      "top 3 channels by cumulative revenue"])
def test_a_running_total_with_a_change_or_a_ranking_is_refused_in_words(question):
    with pytest.raises(CannotPlan, match="running total"):
        plan(read(question), SLICE)


@pytest.mark.parametrize(("follow_up", "start"), [("and prior month?", dt.date(2024, 11, 1)),
                                                   ("and month before?", dt.date(2024, 11, 1))])
def test_the_one_before_said_shortly(follow_up, start):
    reading = follow("revenue in December 2024", follow_up, LATEST)
    assert period(reading)[1] == start and not reading.unknown


def test_the_previous_year_in_a_new_question_counts_from_now():
    reading = follow("orders in 2023", "revenue for the previous year by month", LATEST)
    assert period(reading) == ("relative", "previous", "year", 1)


def test_the_us_in_capitals_is_the_country():
    from services.agent.understanding import spelled_out

    assert "usa, canada" in spelled_out("Sales by country last quarter - just the US, Canada and the UK")
    assert "tell us" in spelled_out("tell us the revenue")


def test_the_value_match_text_is_cut_before_it_is_rewritten():
    from services.agent.embedded_planner import MAX_MATCH_TEXT, value_match_text

    earlier = ["x" * 2000] * 5  # one long word: rewriting it whole would be quadratic
    started = time.perf_counter()
    text = value_match_text("how many high-priority tickets", earlier, SLICE)
    assert time.perf_counter() - started < 0.5 and len(text) <= MAX_MATCH_TEXT
    assert text.startswith("how many high priority tickets")


# --- seventh round: from fresh sets M and N ----------------------------------------------------------------------

@pytest.mark.parametrize(("question", "check"), [
    ("top 3 best sellers last quarter by units moved", lambda r: r.limit == 3 and r.compare is None),
    ("gross vs net sales in 2025?", lambda r: labels(r.measures) == ["Gross revenue", "Net revenue"]),
    ("Break 2025 revenue down by quarter and show me the growth vs the same quarter the year before.",
     lambda r: (r.compare, r.grain) == ("same_period_last_year", "quarter")),
    ("Q4 '25 net sales vs Q4 '24, what's the growth?",
     lambda r: r.compare == "same_period_last_year" and period(r)[1] == dt.date(2025, 10, 1)),
    ("how many diffrent products do we carry?", lambda r: labels(r.measures) == ["Number of products"]),
    ("how many new customers did we add each year", lambda r: r.grain == "year"),
    ("how many support tickets are stuck in open at the moment?", lambda r: [f.values for f in r.filters] == [
        ("open",)]),
])
def test_wordings_from_the_seventh_round(question, check):
    reading = read(question, LATEST)
    assert not reading.unknown and check(reading), (reading.unknown, reading)


def test_same_but_is_a_follow_up_that_narrows():
    reading = follow("revenue by month in 2024", "same but web orders only", LATEST)
    assert reading.grain == "month" and [f.values for f in reading.filters] == [("web",)] and not reading.unknown


def test_the_rows_after_the_most_are_counted_not_listed():
    with pytest.raises(CannotPlan, match="nothing to rank"):  # (the region that placed them: not read)
        plan(read("which territory placed the most orders in 2024?"), SLICE)


# --- eighth round: from fresh sets O, P, Q and R ------------------------------------------------------------------

@pytest.mark.parametrize("question", ["Enterprise revenue this year vs last year",
                                      "how many people signed up this year vs last year?",
                                      "net revenue in 2025 compared to last year"])
def test_a_period_against_last_year_shows_both_years(question):
    reading = read(question, LATEST)
    assert (period(reading), reading.grain, reading.compare, reading.unknown) == (
        ("between", dt.date(2024, 1, 1), dt.date(2026, 1, 1)), "year", None, [])


def test_a_follow_up_comparing_with_last_year_shows_the_earlier_period_and_the_year_before():
    reading = follow("how much revenue did we make this year?", "and how does that compare to last year?", LATEST)
    assert (period(reading), reading.grain, reading.compare) == (
        ("between", dt.date(2024, 1, 1), dt.date(2026, 1, 1)), "year", None)


@pytest.mark.parametrize(("question", "compare"), [("net revenue by year vs last year", "same_period_last_year"),
                                                   ("net revenue growth vs last year", "same_period_last_year"),
                                                   ("net revenue in 2025 year over year", "same_period_last_year")])
def test_a_change_asked_for_or_a_series_keeps_the_figure_against_last_year(question, compare):
    assert read(question, LATEST).compare == compare


def test_a_period_against_the_one_before_shows_both():
    reading = read("orders in Q3 2025 vs the quarter before", LATEST)
    assert (period(reading), reading.grain, reading.compare) == (
        ("between", dt.date(2025, 4, 1), dt.date(2025, 10, 1)), "quarter", None)


def test_what_grew_the_most_after_two_years_side_by_side_ranks_the_later_against_the_earlier():
    earlier = understand("and how does that compare to last year?", SLICE, VALUES,
                         read("how much revenue did we make this year?", LATEST), LATEST)
    reading = understand("which category grew the most, percentage-wise?", SLICE, VALUES, earlier, LATEST)
    assert (period(reading), reading.compare, reading.ranks_change, reading.unknown) == (
        ("between", dt.date(2025, 1, 1), dt.date(2026, 1, 1)), "previous_period", True, [])


def test_another_measure_for_those_same_rows_keeps_the_ranking():
    reading = follow("top 5 regions by net revenue in 2025", "what were the order counts for those same regions?")
    draft = plan(reading, SLICE).draft
    assert [m["metric"] for m in draft["measures"]] == ["met_order_items.net_revenue", "met_orders.order_count"]
    assert (draft["order_by"], draft["limit"]) == ([{"output": "m0", "direction": "desc"}], 5)


@pytest.mark.parametrize(("earlier", "question", "said"), [
    ("which country has the most customers?", "how many of those are enterprise", "those"),
    ("top 5 regions by net revenue in 2025", "show those by month", "those"),
    ("Return rate by category, worst first", "for the worst one, which 3 reasons have the most returned units?",
     "the worst one"),
])
def test_a_limit_on_rows_of_the_earlier_answer_is_refused_saying_they_are_not_seen(earlier, question, said):
    reading = follow(earlier, question)
    assert said in reading.unknown and "rows" in reading.reasons[said]


def test_a_ranking_then_by_month_is_a_series_not_the_top_months():
    reading = follow("top 5 regions by net revenue in 2025", "and by month?")
    assert (reading.grain, reading.limit, reading.direction, reading.dimensions) == ("month", None, None, [])


@pytest.mark.parametrize("question", ["whats the cancellation rate on orders in 2025", "cancelled orders per order"])
def test_a_rate_of_some_rows_is_their_count_per_row(question):
    draft = plan(read(question), SLICE).draft
    assert [m["metric"] for m in draft["measures"]] == ["met_orders.cancelled_orders", "met_orders.order_count"]
    assert draft["calculations"] == [{"id": "per", "kind": "ratio", "of": "m0", "to": "per_count"}]


def test_an_average_per_its_own_row_is_still_the_average():
    assert read("average order value per order").per is None


@pytest.mark.parametrize(("earlier", "question", "value"), [
    ("How many orders got cancelled in 2025?", "what % of all orders is that?", "cancelled"),
    ("web revenue in 2025", "and what share is that?", "web")])
def test_what_share_is_that_makes_the_earlier_value_the_part(earlier, question, value):
    reading = follow(earlier, question)
    assert (reading.share.values, reading.filters, reading.time.words.strip()) == ((value,), [], "in 2025")


def test_what_share_is_that_after_a_count_of_some_rows_is_a_rate():
    reading = follow("cancellations in 2025", "what percentage of orders is that?")
    assert (labels(reading.measures), reading.per["id"]) == (["Cancelled orders"], "ent_orders")


@pytest.mark.parametrize(("question", "had"), [
    ("how many customers have placed an order", {"has": {"not": {"field": "fld_orders.ordered_at", "op": "is_null"}}}),
    ("how many customers have never actually placed an order with us?",
     {"not": {"has": {"not": {"field": "fld_orders.ordered_at", "op": "is_null"}}}}),
])
def test_rows_had_at_any_time_or_never(question, had):
    reading = read(question)
    assert not reading.unknown and plan(reading, SLICE).draft["filter"] == had


def test_the_period_of_one_verb_and_rows_had_by_another():
    reading = read("how many customers who signed up this year have placed an order?", LATEST)
    condition = plan(reading, SLICE).draft["filter"]
    assert condition == {"all": [{"has": {"not": {"field": "fld_orders.ordered_at", "op": "is_null"}}},
                                 {"field": "fld_customers.signup_date", "op": "to_date", "unit": "year"}]}


@pytest.mark.parametrize(("question", "negated"), [("of the ones who joined this year, how many have placed an order?",
                                                    False),
                                                   ("of those, how many have never placed an order?", True)])
def test_how_many_of_those_have_rows_counts_the_earlier_rows(question, negated):
    reading = follow("how many people signed up this year", question, LATEST)
    assert (labels(reading.measures), reading.has_rows["id"], reading.had_ever, reading.had_none, reading.unknown) \
        == (["Number of customers"], "ent_orders", True, negated, [])


def test_splitting_that_keeps_the_earlier_grain():
    reading = follow("new signups per year since 2021", "can you split that by segment")
    assert (reading.grain, labels(reading.dimensions)) == ("year", ["Customer segment"])


def test_another_breakdown_alone_replaces_the_grain():
    reading = follow("revenue by month", "and by region?")
    assert (reading.grain, labels(reading.dimensions)) == (None, ["Region name"])


@pytest.mark.parametrize(("question", "op", "value"), [
    ("which regions did under 15k in sales this year?", "lt", 15000.0),
    ("which territories did under 15k in sales this year?", "lt", 15000.0),
    ("regions with net revenue over $2,500 in 2025", "gt", 2500.0),
    ("categories with at least 1.5m in revenue", "gte", 1_500_000.0),
])
def test_a_bound_on_a_figure_keeps_the_groups_within_it(question, op, value):
    drafted = plan(read(question, LATEST), SLICE)
    assert drafted.draft["having"] == {"output": "m0", "op": op, "value": value}
    assert drafted.draft["dimensions"][0]["field"] in ("fld_regions.name", "fld_products.category")


def test_a_bound_needs_groups_to_keep():
    with pytest.raises(CannotPlan, match="keeps some of the groups"):
        plan(read("net revenue under 15k in 2025", LATEST), SLICE)


def test_a_year_after_over_is_a_period_not_a_bound():
    reading = read("net revenue over 2024")
    assert reading.threshold is None and period(reading)[1] == dt.date(2024, 1, 1)


def test_the_value_after_from_is_the_part_of_a_share():
    reading = read("what share of our online sales in 2025 came from France?")
    assert (reading.share.values, [f.values for f in reading.filters]) == (("France",), [("web",)])


@pytest.mark.parametrize(("question", "check"), [
    ("where are we on turnover ytd?", lambda r: labels(r.measures) == ["Net revenue"]),
    ("how did Q4 net sales land vs Q4 last yaer?", lambda r: r.time.kind == "any" and r.grain == "quarter"),
    ("what's AOV been doing month to month this year", lambda r: r.grain == "month"),
    ("order volume by year w/ YoY growth", lambda r: (r.grain, r.compare) == ("year", "same_period_last_year")),
    ("gross vs net sales for full year 2024", lambda r: period(r)[1:] == (dt.date(2024, 1, 1), dt.date(2025, 1, 1))),
    ("how much have we sold in apparel so far this yr?", lambda r: labels(r.measures) == ["Net revenue"]),
    ("how many orders did we take in 2025?", lambda r: labels(r.measures) == ["Number of orders"]),
    ("for Apparel specifically, returned units by reason", lambda r: labels(r.dimensions) == ["Return reason"]),
    ("units sold this year vs last", lambda r: period(r)[1:] == (dt.date(2024, 1, 1), dt.date(2026, 1, 1))),
])
def test_wordings_from_the_eighth_round(question, check):
    reading = read(question, LATEST)
    assert not reading.unknown and check(reading), (reading.unknown, reading)


def test_which_one_drove_the_growth_ranks_by_growth():
    reading = follow("net revenue in 2024 and 2025", "which channel drove the uplift?", LATEST)
    assert (reading.ranks_change, labels(reading.dimensions), reading.unknown) == (True, ["Sales channel"], [])


@pytest.mark.parametrize("question", ["how many units of each product do we have in stock right now",
                                      "take web out of it"])
def test_stock_and_take_out_stay_unknown(question):
    assert read(question).unknown


@pytest.mark.parametrize(("question", "said"), [
    ("which regions did under 15k in sales this year?", ", only where net revenue is under 15,000"),
    ("how many customers have never placed an order", " with no order"),
    ("how many customers who signed up this year have placed an order?",
     " with signup date year to date, with at least one order"),
])
def test_the_caption_says_the_bound_and_the_rows_had(question, said):
    from services.agent.composing import qualifiers
    reading = read(question, LATEST)
    assert qualifiers(reading, plan(reading, SLICE)).endswith(said)


def test_how_many_of_those_are_a_value_is_one_number():
    reading = follow("how many support tickets were opened this year, by priority?", "how many of those are open?",
                     LATEST)
    assert (reading.dimensions, [f.values for f in reading.filters], reading.unknown) == ([], [("open",)], [])


def test_a_quarter_said_with_this_year_is_that_quarter():
    reading = read("Q4 orders from enterprise customers, this year vs last year", LATEST)
    assert [(p.start, p.end) for p in reading.time.parts] == [(dt.date(2024, 10, 1), dt.date(2025, 1, 1)),
                                                              (dt.date(2025, 10, 1), dt.date(2026, 1, 1))]


@pytest.mark.parametrize(("question", "measure", "compare"), [
    ("Q4 orders from enterprise accts, this yr vs last - and the % change?", "Number of orders",
     "same_period_last_year"),
    ("percentage change in net revenue by month", "Net revenue", "previous_period")])
def test_a_change_in_percent_is_a_growth_not_a_share(question, measure, compare):
    reading = read(question, LATEST)
    assert (reading.share, reading.share_of_total, reading.compare, labels(reading.measures)) == (
        None, False, compare, [measure])


def test_and_across_punctuation_does_not_join_two_measures():
    assert labels(read("orders from enterprise accounts, this year - and the growth?", LATEST).measures) == [
        "Number of orders"]
    assert labels(read("orders and customers by region").measures) == ["Number of orders", "Number of customers"]


# --- from a review of the eighth round: readings that must not come back ------------------------------------------

@pytest.mark.parametrize("follow_up", ["and in 2024?", "and by month?"])
@pytest.mark.parametrize("earlier", ["how many customers have placed an order",
                                     "how many customers have never placed an order"])
def test_a_period_after_rows_had_at_any_time_dates_them_or_is_refused_never_a_crash(earlier, follow_up):
    reading = follow(earlier, follow_up, LATEST)
    if follow_up == "and by month?":  # (a count of customers per month of their orders: whose month?)
        assert "whose date" in reading.reasons[reading.unknown[0]]
    else:  # those with (or without) an order in 2024
        had = plan(reading, SLICE).draft["filter"]
        had = had.get("not", had)["has"]
        assert had["all"][0] == {"field": "fld_orders.ordered_at", "op": "gte", "value": "2024-01-01T00:00:00"}


@pytest.mark.parametrize("question", [
    "how many products under $20 by category", "which regions with more than 100 orders had the highest revenue?",
    "how many orders by channel had over 3 units", "how many customers are over 30 by segment",
    "how many orders over $100 in 2025 by channel",
    "cancellation rate by channel for channels with more than 100 orders",
    "which regions grew by more than 5000 in revenue in 2025",
])
def test_a_bound_beside_another_noun_or_on_a_change_or_rate_is_refused(question):
    reading = read(question, LATEST)
    assert reading.threshold is None and reading.unknown


def test_a_bound_does_not_carry_over_to_another_figure():
    reading = follow("which regions did under 15k in sales this year?", "and what about orders?", LATEST)
    assert reading.threshold is None and reading.unknown == ["under 15k"]


@pytest.mark.parametrize(("question", "starts"), [
    ("revenue in Q3 2025 vs the year before", [dt.date(2024, 7, 1), dt.date(2025, 7, 1)]),
    ("orders in March 2025 vs the prior year", [dt.date(2024, 3, 1), dt.date(2025, 3, 1)]),
])
def test_a_year_before_a_quarter_or_month_is_the_same_one_a_year_earlier(question, starts):
    assert [part.start for part in read(question, LATEST).time.parts] == starts


@pytest.mark.parametrize("question", ["revenue in 2025 vs the month before",
                                      "orders last month vs the previous quarter"])
def test_a_period_against_a_shorter_or_other_one_before_is_refused(question):
    assert read(question, LATEST).unknown


def test_comparing_with_last_year_keeps_the_earlier_groups():
    reading = follow("revenue by region this year", "how does that compare to last year?", LATEST)
    assert labels(reading.dimensions) == ["Region name"] and reading.grain == "year"


@pytest.mark.parametrize("question", ["what were the order counts for those same regions in 2024?",
                                      "and units sold for those same regions, top 3",
                                      "what about units sold for them, lowest first"])
def test_those_rows_with_another_period_or_order_are_refused(question):
    reading = follow("top 5 regions by net revenue in 2025", question, LATEST)
    assert reading.unknown == ["those"] and "rows" in reading.reasons["those"]


def test_of_those_how_many_orders_counts_orders_of_the_earlier_rows():
    reading = follow("how many people signed up in 2024", "of those, how many orders did they place?", LATEST)
    condition = plan(reading, SLICE).draft["filter"]
    assert labels(reading.measures) == ["Number of orders"] and condition["all"][0]["field"] == \
        "fld_customers.signup_date"


def test_of_those_with_a_period_of_its_own_is_refused():
    assert follow("how many people signed up in 2024", "of those, how many placed an order in 2025?", LATEST).unknown


@pytest.mark.parametrize("earlier", ["how many cancelled web orders in 2025",
                                     "how many cancellations in 2025 by channel"])
def test_what_share_is_that_with_no_one_part_is_refused(earlier):
    assert follow(earlier, "what % of all orders is that?", LATEST).unknown


def test_a_change_in_a_rate_is_refused_not_computed_on_the_count():
    with pytest.raises(CannotPlan, match="a change in"):
        plan(read("which channel's cancellation rate grew the most in 2025", LATEST), SLICE)


@pytest.mark.parametrize("latest", [dt.date(2025, 6, 15)])
@pytest.mark.parametrize("question", ["revenue ytd vs same period last year", "revenue this year vs last year"])
def test_a_part_of_a_year_is_set_against_the_same_days_a_year_before(question, latest):
    reading = read(question, latest)
    assert (reading.time.kind, reading.compare) == ("relative", "same_period_last_year")


def test_a_ranking_this_year_vs_last_year_keeps_the_ranking():
    reading = read("top 5 products by revenue this year vs last year", LATEST)
    assert (reading.limit, labels(reading.dimensions), reading.compare) == (5, ["Product name"],
                                                                           "same_period_last_year")


@pytest.mark.parametrize("question", ["what's driving cancellations in 2025?",
                                      "what drove the drop in revenue in 2025?"])
def test_why_questions_are_not_answered_with_a_figure(question):
    assert read(question, LATEST).unknown


def test_how_much_sold_in_units_is_not_money():
    assert labels(read("how much have we sold in units this year", LATEST).measures) == ["Units sold"]


@pytest.mark.parametrize(("question", "count"), [("What are the top 3 reasons people send stuff back this year?", 3),
                                                 ("top 3 return reasons this year", 3)])
def test_a_ranking_of_what_describes_rows_counts_them(question, count):
    reading = read(question, LATEST)
    assert (labels(reading.measures), reading.limit) == (["Number of returns"], count)


def test_a_ranking_by_size_of_nothing_named_is_not_counted():
    assert not read("which channel is the biggest").measures


@pytest.mark.parametrize(("question", "check"), [
    ("tickets per month in the back half of this year?", lambda r: period(r)[1:] == (dt.date(2025, 7, 1),
                                                                                     dt.date(2026, 1, 1))),
    ("Prepping the board pack - where did net sales land for this year overall?",
     lambda r: labels(r.measures) == ["Net revenue"]),
    ("Canada v France - order count and revenue side by side", lambda r: r.split.values == ("Canada", "France")),
    ("net sales this year, and vs LY?", lambda r: r.time.kind == "between" and r.grain == "year"),
    ("which departments get sent back the most? return rate by category, worst first",
     lambda r: r.direction == "desc"),
])
def test_wordings_from_fresh_sets_aa_to_ad(question, check):
    reading = read(question, LATEST)
    assert check(reading), (reading.unknown, reading)


# --- fresh sets ae, af, ag ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("question", "grain", "compare"), [
    ("how has order volume moved month on month over the last 6 months?", "month", "previous_period"),
    ("revenue for each of the last 3 months", "month", None),
    ("orders in each of the past two quarters", "quarter", None),
    ("give me 2024 sales broken out by quarter", "quarter", None),
])
def test_a_grain_said_beside_a_stretch_breaks_it_down(question, grain, compare):
    reading = read(question, LATEST)
    assert (reading.unknown, reading.compare) == ([], compare)
    assert plan(reading, SLICE).draft["dimensions"][0]["grain"] == grain


def test_year_on_year_said_twice_is_one_comparison():
    reading = read("how's revenue grown year on year since 2021? need the YoY % for each year", LATEST)
    assert (reading.unknown, reading.compare, reading.grain) == ([], "same_period_last_year", "year")


def test_all_of_a_field_beside_a_total_is_the_total_and_a_ranking_of_all_lists_them():
    reading = read("what was total revenue for 2024, all channels?")
    assert (reading.dimensions, reading.unknown, labels(reading.measures)) == ([], [], ["Net revenue"])
    assert labels(read("Rank all categories by return rate, in total").dimensions) == ["Product category"]


def test_two_measures_compared_are_side_by_side_and_another_name_of_the_measure_is_its_own():
    reading = read("Compare gross vs net sales for 2025")
    assert (labels(reading.measures), reading.unknown) == (["Gross revenue", "Net revenue"], [])
    reading = read("whats the avg bakset size per chanel for 2025")
    assert (labels(reading.measures), reading.unknown) == (["Average order value"], [])


def test_a_named_day_of_a_year_is_that_day_and_is_said():
    reading = read("How many orders were placed on Black Friday 2024?", LATEST)
    assert period(reading) == ("between", dt.date(2024, 11, 29), dt.date(2024, 11, 30))
    assert ("black friday 2024", "29 Nov 2024") in reading.assumed
    assert period(read("revenue on cyber monday, 2023")) == ("between", dt.date(2023, 11, 27), dt.date(2023, 11, 28))
    assert period(read("orders on halloween last year", LATEST)) == ("between", dt.date(2024, 10, 31),
                                                                    dt.date(2024, 11, 1))
    assert read("black friday this year - how many orders").needs_latest  # read again once "now" is known


def test_a_named_day_without_its_year_is_asked_about_unless_a_short_stretch_holds_it():
    reading = read("revenue on black friday", LATEST)
    assert reading.unknown == ["black friday"] and "which year" in reading.reasons["black friday"]
    assert "black friday" in read("black friday revenue 2024", LATEST).unknown  # never all of 2024
    reading = read("how many orders were placed each day from nov 24 to dec 1 2025? want to see the black friday "
                   "/ cyber monday bump", LATEST)
    assert (reading.unknown, reading.grain) == ([], "day")


def test_an_amount_in_a_sentence_of_its_own_is_never_passed_over():
    reading = read("gross vs net sales for 2025 - how much are discounts costing us?")
    assert "discounts" in reading.unknown


def test_a_near_spelling_of_a_catalog_word_is_not_taken_for_a_value_two_letters_away():
    values = [*VALUES, {**match("refunded", "orders", "status"), "matched_text": "retuned", "approximate": True}]
    reading = understand("how many units were retuned this year, split by reason", SLICE, values, latest=LATEST)
    assert (labels(reading.measures), labels(reading.dimensions), reading.filters) == (
        ["Returned units"], ["Return reason"], [])


def test_the_same_period_a_year_earlier_moves_the_earlier_period_back_a_year():
    reading = follow("How many orders did we get in Q3 2025, by channel?", "and for the same quarter a year earlier?")
    assert period(reading) == ("between", dt.date(2024, 7, 1), dt.date(2024, 10, 1))
    assert labels(reading.dimensions) == ["Sales channel"] and reading.compare is None
    # "last quarter": which one a year back is known once "now" is
    relative = follow("How many orders did we get last quarter?", "and for the same quarter a year earlier?")
    assert relative.needs_latest and relative.unknown == []
    dated = follow("How many orders did we get last quarter?", "and for the same quarter a year earlier?", LATEST)
    assert period(dated) == ("between", dt.date(2024, 7, 1), dt.date(2024, 10, 1))


def test_how_much_more_between_two_periods_is_the_change_from_the_earlier():
    reading = read("how much more revenue did we make in nov 2025 than in oct?", LATEST)
    assert (period(reading), reading.compare, reading.unknown) == (
        ("between", dt.date(2025, 11, 1), dt.date(2025, 12, 1)), "previous_period", [])
    assert "change" in {c["kind"] for c in plan(reading, SLICE).draft["calculations"]}


def test_every_period_said_outright_is_never_the_conversation_period():
    reading = follow("What percentage of the orders placed this year were cancelled?",
                     "which channel had the most cancellations of all time?", LATEST)
    assert reading.time is None and not reading.period_kept
    for question in ("and for all time?", "what about over the whole history?"):
        reading = follow("revenue in 2025", question)
        assert (reading.time, reading.unknown, labels(reading.measures)) == (None, [], ["Net revenue"])
    reading = read("how many orders have we had each year since we started?")
    assert (reading.time, reading.grain, reading.unknown) == (None, "year", [])


def test_a_quarter_and_its_year_said_apart_are_that_quarter_of_that_year():
    reading = read("Q4 revenue this year vs Q4 last year?", LATEST)
    assert [(p.start, p.end) for p in reading.time.parts] == [(dt.date(2024, 10, 1), dt.date(2025, 1, 1)),
                                                              (dt.date(2025, 10, 1), dt.date(2026, 1, 1))]
    assert reading.unknown == [] and reading.grain == "quarter"


@pytest.mark.parametrize("question", [
    "which year had the highest revenue?", "show revenue by year", "what is our total revenue ever?",
    "what is our revenue to date?", "revenue of all time by channel"])
def test_a_question_across_periods_or_about_now_is_never_asked_within_the_conversation_period(question):
    reading = follow("revenue by channel in 2024", question, LATEST)
    assert reading.time is None and not reading.period_kept
    tickets = follow("how many support tickets were opened in 2024?", "how many support tickets are open right now?")
    assert tickets.time is None and not tickets.period_kept


def test_a_named_day_asked_of_is_that_day_or_refused_never_the_stretch_around_it():
    assert "black friday" in read("revenue on black friday in november 2025", LATEST).unknown
    reading = read("revenue on black friday 2025 compared to last year", LATEST)
    assert "black friday 2025" in reading.unknown and "another date" in reading.reasons["black friday 2025"]
    assert period(read("orders on new year's eve 2024")) == ("between", dt.date(2024, 12, 31), dt.date(2025, 1, 1))


@pytest.mark.parametrize("question", [
    "how much more revenue did we make in 2024 than in 2025?",  # (the earlier named first: both shown)
    "how much more revenue in 2025 than in 2023?",  # (not one before the other: both shown)
    "how many more orders did web get than store in q1 and q2 2025?",  # (values set apart, not periods)
])
def test_how_much_more_is_a_change_only_from_the_period_just_before(question):
    reading = read(question, LATEST)
    assert reading.compare is None and reading.unknown == []


def test_the_same_part_a_year_earlier_must_be_the_earlier_periods_own_unit():
    for earlier, question in (("revenue in 2025", "and for the same quarter a year earlier?"),
                              ("revenue in Q3 2025", "and the same month a year earlier?")):
        assert follow(earlier, question, LATEST).unknown


@pytest.mark.parametrize(("said", "value", "kept"), [
    ("austria", "Australia", False),  # an English word, meant as written
    ("stoves", "store", False),
    ("cancelld", "cancelled", True),  # one slip from the catalog's own word, which is the value
    ("quebec", "Québec", True),  # the value without its accent
])
def test_a_near_spelling_is_a_value_only_when_no_word_is_meant(said, value, kept):
    field = {"Australia": ("regions", "country"), "store": ("orders", "channel"), "cancelled": ("orders", "status"),
             "Québec": ("regions", "name")}[value]
    values = [{**match(value, *field), "matched_text": said, "approximate": True}]
    reading = understand(f"revenue from {said} orders in 2024", SLICE, values, latest=LATEST)
    assert bool(reading.filters) == kept and (said in reading.unknown) != kept


def test_the_year_before_a_relative_period_is_read_once_now_is_known():
    unread = follow("What was our average order value last year?", "how does that compare with the year before?")
    assert unread.needs_latest  # (the planner reads it again knowing "now", whatever else is unread)
    reading = follow("What was our average order value last year?", "how does that compare with the year before?",
                     LATEST)
    assert reading.unknown == [] and [(p.start, p.end) for p in reading.time.parts] == [
        (dt.date(2023, 1, 1), dt.date(2024, 1, 1)), (dt.date(2024, 1, 1), dt.date(2025, 1, 1))]


@pytest.mark.parametrize(("question", "measure", "filtered"), [
    ("did we sell more to enterprise or small business customers in 2025?", "Net revenue", False),
    ("how many did we sell to enterprise customers?", "Units sold", True),
    ("how much did we bring in last quarter", "Net revenue", False),
])
def test_what_is_sold_to_customers_is_counted_not_the_customers(question, measure, filtered):
    reading = read(question, LATEST)
    assert (labels(reading.measures), reading.unknown, bool(reading.filters)) == ([measure], [], filtered)


def test_customers_sold_to_are_those_who_bought():
    reading = read("how many customers did we sell to in 2025", LATEST)
    assert labels(reading.measures) == ["Number of customers"] and reading.has_rows is not None
    assert period(reading) == ("between", dt.date(2025, 1, 1), dt.date(2026, 1, 1))


def test_how_many_things_one_row_has_is_per_that_row():
    reading = read("On average how many orders does a customer place, split by segment?")
    assert (labels(reading.measures), reading.per["label"], reading.unknown) == (
        ["Number of orders"], "Customer", [])


def test_this_years_without_its_apostrophe_is_this_year():
    reading = read("break down this years returns by reason, just the number of returns")
    assert (period(reading), reading.unknown) == (("relative", "to_date", "year", 1), [])


def test_each_part_against_the_same_part_a_year_before_keeps_the_parts():
    asked = (("show me monthly revenue for 2025", "and how does each month stack up against the same month in 2024?"),
             ("phone orders by quarter this year", "how's that stack up vs the same quarters in 2024?"))
    for earlier, question in asked:
        reading = follow(earlier, question, LATEST)
        assert (reading.compare, reading.unknown) == ("same_period_last_year", [])
        assert plan(reading, SLICE).draft["dimensions"][0]["grain"] == ("month" if "month" in question else "quarter")
    assert follow("phone orders by quarter this year", "how's that stack up vs the same quarters in 2024?").needs_latest


def test_bringing_in_orders_is_orders_and_bringing_in_alone_is_money():
    assert labels(read("did q4 this year bring in more orders than q4 last year?", LATEST).measures) == [
        "Number of orders"]
    assert labels(read("what did web orders bring in last quarter?", LATEST).measures) == ["Net revenue"]


def test_asking_for_what_people_wrote_is_named_as_such_and_a_go_ahead_is_an_order():
    reading = read("show me what customers actually wrote in their urgent support tickets")
    assert reading.written
    assert not read("how many tickets were opened in 2025").written
    from services.agent.understanding import asks_to_change
    assert asks_to_change("Go ahead and change every refunded order from December to completed.")
    assert not asks_to_change("go and see the change in revenue")


def test_records_said_to_have_done_something_are_those_that_did_never_all_of_them():
    for question in ("how many customers bought", "how many enterprise customers ordered"):
        reading = read(question)
        assert reading.has_rows is not None and reading.had_ever and reading.unknown == []
    assert read("how many units did enterprise customers buy").has_rows is None  # (units are what was bought)


def test_splitting_a_breakdown_by_a_grain_keeps_its_groups_and_a_bare_grain_replaces_them():
    split = follow("Sales by channel for 2025 please", "can you split that by quarter")
    assert labels(split.dimensions) == ["Sales channel"] and split.grain == "quarter"
    split_out = follow("last 6 months of sales month by month pls", "split that out by channel")
    assert labels(split_out.dimensions) == ["Sales channel"] and split_out.grain == "month"
    assert split_out.unknown == []
    instead = follow("Sales by channel for 2025 please", "and by quarter?")
    assert instead.dimensions == [] and instead.grain == "quarter"


def test_every_value_of_a_field_set_off_after_the_question_is_one_total():
    assert read("what did we do in sales last year, all channels").dimensions == []
    assert labels(read("show revenue, all channels by month").dimensions) == ["Sales channel"]  # (listed)
    assert labels(read("revenue for all channels").dimensions) == ["Sales channel"]


def test_an_event_said_as_two_words_is_its_noun_and_having_signed_up_is_being_a_customer():
    signups = read("how many new sign ups did we get last qtr", LATEST)
    assert labels(signups.measures) == ["Number of customers"] and signups.unknown == []
    never = read("how many ppl have signed up but never placed a single order")
    assert never.has_rows is not None and never.had_none and never.unknown == []


def test_complaints_and_subject_lines_are_what_people_wrote():
    assert read("what are customers actually moaning about in the urgent tickets? paste me the subject lines").written


def test_a_sentence_of_ones_own_naming_only_what_the_question_does_is_read_with_it():
    restated = read("Please, how are the orders of year 2025 split by the channel? I need the number of orders "
                    "for each one.")
    assert labels(restated.dimensions) == ["Sales channel"] and restated.unknown == []
    added = read("revenue by channel in 2025. I need the number of orders for each one.")
    assert added.unknown == ["I need the number of orders for each one"]  # (a measure the rest does not name)


def test_a_channel_said_to_be_dying_asks_for_its_change_over_time():
    reading = read("phone orders by year - is that channel dying?")
    assert reading.grain == "year" and reading.unknown == []
    draft = plan(read("is web revenue dwindling?"), SLICE).draft  # (no grain said: month on month)
    assert draft["dimensions"][0]["grain"] == "month" and {"change", "growth"} <= {
        c["kind"] for c in draft["calculations"]}


# --- round F: from fresh sets AT, AU, AV, AW and a review -----------------------------------------------------------

def test_splitting_keeps_the_groups_only_when_that_is_split_and_nothing_says_instead():
    for question in ("split it by quarter instead", "just split the total by quarter", "and by quarter?"):
        reading = follow("Sales by channel for 2025 please", question)
        assert reading.dimensions == [] and reading.grain == "quarter", question
    web_vs_store = follow("sales by channel for 2025", "show me the web vs store split by quarter")
    assert web_vs_store.dimensions == [] and web_vs_store.split.values == ("web", "store")
    after_ranking = follow("top 5 regions by revenue", "split that by month")  # months are a series, all shown
    assert after_ranking.dimensions == [] and after_ranking.grain == "month" and after_ranking.limit is None


def test_all_of_a_field_asked_apart_lists_them_and_in_a_follow_up_lifts_the_earlier_filter():
    for question in ("break down revenue in 2025, all channels", "list revenue in 2025, all channels",
                     "revenue in 2025 side by side, all channels"):
        assert labels(read(question).dimensions) == ["Sales channel"], question
    every = follow("web revenue in 2025", "how about 2024, all channels")
    assert every.filters == [] and every.dimensions == [] and every.time.start == dt.date(2024, 1, 1)


def test_a_sentence_of_ones_own_naming_another_field_is_not_read_with_the_question():
    reading = read("revenue by channel in 2025? I need revenue by region instead.")
    assert reading.unknown == ["I need revenue by region instead"]


def test_subject_to_is_no_request_for_what_people_wrote_and_subject_lines_are():
    assert not read("how much revenue in 2025 was subject to a discount").written
    assert read("paste me the subject lines of the urgent tickets").written


def test_a_name_after_a_question_mark_is_no_second_word_of_the_one_before():
    reading = read("is the marketplace channel growing? yearly sales pls")
    assert labels(reading.measures) == ["Net revenue"] and reading.grain == "year"


def test_selling_through_each_channel_is_by_channel():
    reading = read("how much did we sell through each channel this year", LATEST)
    assert labels(reading.dimensions) == ["Sales channel"] and reading.unknown == []


def test_a_value_that_did_something_counts_its_rows_unless_it_was_done_to():
    smbs = {**match("small_business", "customers", "segment"), "matched_text": "smbs"}
    bought = understand("how many SMBs bought in 2024?", SLICE, [*VALUES, smbs])
    assert labels(bought.measures) == ["Number of customers"] and bought.has_rows is not None
    assert read("how many apparel were returned").measures == []  # (products did not return anything)


def test_who_is_sending_stuff_back_is_said_by_the_verb_not_counted():
    reading = read("top 3 reasons people are sending stuff back this year", LATEST)
    assert labels(reading.measures) == ["Number of returns"] and reading.limit == 3 and reading.unknown == []
    asked = read("which customers are buying the most")  # (what is asked about: as before)
    assert asked.unknown == ["customers"]


def test_brought_in_the_most_from_is_money_and_the_most_orders_is_orders():
    assert labels(read("which 3 regions brought in the most from enterprise accounts in 2025").measures) == [
        "Net revenue"]
    assert labels(read("which region brought in the most orders in 2025").measures) == ["Number of orders"]


def test_more_than_a_year_before_by_how_much_is_the_change():
    reading = read("did we get more orders in 2025 than 2024? by how much %")
    assert reading.compare == "previous_period" and reading.time.start == dt.date(2025, 1, 1)
    assert reading.share_of_total is False


def test_having_done_something_only_some_rows_did_is_never_passed_over():
    # A customer's second date ("churned") is something only some did: "have churned but never ordered" is not
    # every customer without an order (not read, so said); the one date all have, signing up, is passed over.
    with_churn = copy.deepcopy(SLICE)
    customers = next(e for e in with_churn if e["id"] == "ent_customers")
    customers["fields"].append({"id": "fld_customers.churned_at", "label": "Churn date", "type": "date",
                                "exposure": "bounded-values", "synonyms": [], "event_verbs": ["churned"]})
    churned = understand("how many customers have churned but never placed an order", with_churn, VALUES)
    assert "never" in churned.unknown
    assert read("how many customers have signed up but never placed an order").unknown == []


# --- round G: from fresh sets AX, AY, AZ and BA ---------------------------------------------------------------------

def test_which_grew_its_measure_the_most_between_two_years_ranks_the_change():
    reading = read("which channel grew its revenue the most from 2024 to 2025?")
    assert reading.ranks_change and reading.compare == "previous_period"
    assert reading.time.start == dt.date(2025, 1, 1) and labels(reading.dimensions) == ["Sales channel"]


def test_which_had_less_in_one_period_than_another_says_what_it_can_show_instead():
    with pytest.raises(CannotPlan, match="side by side: \u201cNumber of orders by sales channel in 2024 vs 2025"):
        plan(read("which channels had fewer orders in 2025 than in 2024?"), SLICE)


def test_what_tickets_say_and_what_people_are_writing_ask_for_text():
    assert read("show me what the urgent support tickets actually say").written
    assert read("what are customers actually writing in the urgent tickets? paste me a few").written


def test_how_many_diff_customers_is_how_many_different_ones():
    reading = read("how many diff customers ordered in 2025")
    assert labels(reading.measures) == ["Number of customers"] and reading.unknown == []


# --- round H: from fresh sets BB, BC, BD and BE ---------------------------------------------------------------------

@pytest.mark.parametrize("question", [
    "monthly order count for 2025 and how much it went up or down from the month before",
    "monthly order count for 2025 and how much it changed from the month before",
])
def test_how_much_it_moved_from_the_month_before_is_each_month_against_the_one_before(question):
    drafted = plan(read(question, LATEST), SLICE).draft
    assert [c["kind"] for c in drafted["calculations"]] == ["prior", "change", "growth"]
    assert {c["against"] for c in drafted["calculations"]} == {"previous_period"}
    assert drafted["dimensions"] == [{"id": "t", "field": "fld_orders.ordered_at", "grain": "month"}]


def test_up_or_down_is_both_periods_and_by_how_much_is_the_change():
    whether = read("did web revenue go up or down in 2025 vs 2024?", LATEST)
    assert (whether.compare, whether.grain, whether.time.start) == (None, "year", dt.date(2024, 1, 1))
    amount = read("did web revenue go up or down in 2025 compared to 2024? by how much", LATEST)
    assert (amount.compare, amount.time.start, amount.unknown) == ("previous_period", dt.date(2025, 1, 1), [])
    asked = read("how much revenue did we make in 2025 and did it go up or down vs 2024", LATEST)
    assert asked.compare is None, "'how much revenue' asks for the revenue, not for how much it moved"


def test_within_a_value_is_that_value():
    reading = read("Within Apparel, which subcategories did best in 2025 by revenue?", LATEST)
    assert reading.unknown == [] and [f.values for f in reading.filters] == [("Apparel",)]
    assert labels(reading.dimensions) == ["Product subcategory"]


def test_only_counting_some_rows_in_a_follow_up_narrows_them_and_keeps_the_measure():
    reading = follow("top 3 products by units sold this year", "and if we only count web purchases?", LATEST)
    assert labels(reading.measures) == ["Units sold"] and reading.limit == 3
    assert [f.values for f in reading.filters] == [("web",)]


def test_values_compared_and_the_same_field_asked_for_by_name_are_one_column():
    drafted = plan(read("Do small business customers order more often than enterprise ones? Orders per customer "
                        "by segment would help"), SLICE).draft
    assert [d["field"] for d in drafted["dimensions"]] == ["fld_customers.segment"]


# --- round I: from fresh sets BF, BG, BH and BI ---------------------------------------------------------------------

@pytest.mark.parametrize("question", ["What are the top 3 reasons for returns this year?",
                                      "which category had the most returns in 2025"])
def test_returns_are_counted_as_returns(question):
    """The model's "returns" is Number of returns: what every author who did not read the model meant by it."""
    assert labels(read(question, LATEST).measures) == ["Number of returns"]
    assert labels(read("units returned by reason in 2025", LATEST).measures) == ["Returned units"]


@pytest.mark.parametrize(("question", "span"), [
    ("Show me quarterly sales since the start of last year", ("relative", "trailing", "year", 2)),
    ("revenue by channel since last month", ("relative", "trailing", "month", 2)),
    ("orders since the beginning of the previous quarter", ("relative", "trailing", "quarter", 2)),
    ("orders since the start of this quarter", ("relative", "to_date", "quarter", 1)),
    ("orders since the beginning of 2024", ("since", dt.date(2024, 1, 1), None)),  # not "in 2024"
])
def test_since_a_period_named_from_now_runs_from_its_start_to_the_latest(question, span):
    reading = read(question, LATEST)
    assert period(reading) == span and reading.unknown == []


@pytest.mark.parametrize(("question", "span"), [
    ("apparel sales by month, last 12 mo", ("relative", "trailing", "month", 12)),
    ("orders last mo", ("relative", "previous", "month", 1)),
])
def test_mo_is_a_month(question, span):
    reading = read(question, LATEST)
    assert period(reading) == span and reading.unknown == []


def test_rank_em_asks_for_them_ranked():
    reading = read("which categories sold the most units in 2025? rank em", LATEST)
    assert reading.unknown == [] and labels(reading.dimensions) == ["Product category"]


# --- round J: from fresh sets BJ, BK, BL and BM ---------------------------------------------------------------------

@pytest.mark.parametrize(("question", "grain", "limit", "direction"), [
    ("Which three months of 2025 brought in the most money?", "month", 3, "desc"),
    ("top 3 months by revenue in 2025", "month", 3, "desc"),
    ("which 2 quarters had the fewest orders", "quarter", 2, "asc"),
])
def test_the_periods_themselves_ranked(question, grain, limit, direction):
    reading = read(question, LATEST)
    assert (reading.grain, reading.limit, reading.direction, reading.unknown) == (grain, limit, direction, [])
    assert plan(reading, SLICE).draft["dimensions"][0]["grain"] == grain


def test_the_top_three_regions_are_still_regions():
    reading = read("top 3 regions by revenue", LATEST)
    assert (labels(reading.dimensions), reading.grain) == (["Region name"], None)


@pytest.mark.parametrize(("question", "span"), [
    ("order volume by quarter since start of 2024", ("since", dt.date(2024, 1, 1), None)),
    ("orders since beginning of last year", ("relative", "trailing", "year", 2)),
])
def test_since_the_start_without_the(question, span):
    reading = read(question, LATEST)
    assert period(reading) == span and reading.unknown == []


def test_by_how_many_asks_for_the_change():
    drafted = plan(read("were returns up or down last month vs the month before, and by how many?", LATEST),
                   SLICE).draft
    assert [c["kind"] for c in drafted["calculations"]] == ["prior", "change", "growth"]


def test_tho_is_only_said():
    reading = follow("top 10 products by revenue last quarter", "same thing on units, just the top 3 tho", LATEST)
    assert reading.unknown == [] and reading.limit == 3 and labels(reading.measures) == ["Units sold"]


# --- round L (fresh sets br, bs, bt, bu) ----------------------------------------------------------------------

@pytest.mark.parametrize("question", [
    "How many customers who've bought from us have never returned anything?",
    "how many customers who have ordered from us have never returned anything?",
    "How many customers have bought something but never sent anything back?",
])
def test_bought_but_never_returned_is_had_one_and_none_of_the_other(question):
    reading = read(question, LATEST)
    assert reading.unknown == [] and labels(reading.measures) == ["Number of customers"]
    assert (reading.has_rows["label"], reading.had_none, reading.lacks_rows["label"]) == ("Order", False, "Return")
    conditions = plan(reading, SLICE).draft["filter"]["all"]
    assert conditions[0] == {"has": {"not": {"field": "fld_orders.ordered_at", "op": "is_null"}}}
    assert conditions[1] == {"not": {"has": {"not": {"field": "fld_returns.returned_at", "op": "is_null"}}}}


def test_units_sent_back_are_returned_units_at_any_time():
    reading = read("which 10 SKUs had the most units sent back", LATEST)
    assert (labels(reading.measures), reading.limit, reading.unknown) == (["Returned units"], 10, [])
    # a measure already named after those rows stays itself
    assert labels(read("which departments get sent back the most? return rate by category", LATEST).measures) \
        == ["Return rate"]


def test_a_quarter_with_a_two_digit_year():
    reading = read("q3 25 vs q3 24 - how many orders?", LATEST)
    assert reading.unknown == [] and [p.start for p in reading.time.parts] == [dt.date(2024, 7, 1),
                                                                               dt.date(2025, 7, 1)]
    assert read("top 25 products in q3 2025", LATEST).limit == 25  # (a number after a full year is not a year)


def test_a_trend_through_a_year_is_during_it():
    reading = read("how did monthly revenue trend through 2025?", LATEST)
    assert (reading.unknown, reading.grain, period(reading)) == ([], "month", ("between", dt.date(2025, 1, 1),
                                                                               dt.date(2026, 1, 1)))


def test_other_values_of_a_split_asked_next_stay_side_by_side_unless_combined():
    earlier = "revenue from web vs store orders in 2025"
    apart = follow(earlier, "what about phone and marketplace?", LATEST)
    assert apart.split.values == ("phone", "marketplace") and not apart.filters
    together = follow(earlier, "and phone and marketplace combined?", LATEST)
    assert together.split is None and together.unknown == []
    assert [f.values for f in together.filters] == [("phone", "marketplace")]
    assert follow(earlier, "now only phone", LATEST).split is None


def test_compared_with_two_more_values_keeps_the_earlier_one():
    values = [*VALUES, match("consumer", "customers", "segment")]
    earlier = understand("whats AOV for enterprise accounts this year", SLICE, values, latest=LATEST)
    reading = understand("how does that compare w/ small business and consumer?", SLICE, values, earlier, LATEST)
    assert (reading.split.values, reading.unknown) == (("enterprise", "small_business", "consumer"), [])


def test_a_follow_up_ranking_what_the_earlier_measure_cannot_reach_counts_its_rows():
    reading = follow("Is the return rate higher for Apparel than for Grocery?",
                     "ok what are the top 3 reasons people send back apparel?", LATEST)
    assert (labels(reading.measures), labels(reading.dimensions), reading.limit) == (
        ["Number of returns"], ["Return reason"], 3)


def test_never_had_anything_sent_back():
    reading = read("how many orders have never had anything sent back?", LATEST)
    assert (reading.unknown, reading.had_none, reading.has_rows["label"]) == ([], True, "Return")


# --- round M (fresh sets bv, bw, bx, by) ----------------------------------------------------------------------

@pytest.mark.parametrize(("question", "grain"), [
    ("how did monthly revnue move through 2025", "month"),  # a grain said anywhere: "through 2025" is during it
    ("how fast have orders grown each year?", "year"),  # how fast it grew: the change, each year
    ("How much has our order volume grown from one year to the next?", "year"),
])
def test_change_and_periods_said_other_ways(question, grain):
    reading = read(question, LATEST)
    assert (reading.unknown, plan(reading, SLICE).draft["dimensions"][0]["grain"]) == ([], grain)
    if "through" in question:
        assert period(reading) == ("between", dt.date(2025, 1, 1), dt.date(2026, 1, 1))
    else:
        assert [c["kind"] for c in plan(reading, SLICE).draft["calculations"]] == ["prior", "change", "growth"]


def test_from_a_year_through_a_year_is_still_a_stretch():
    assert period(read("revenue from 2023 through 2025 by month", LATEST)) == (
        "between", dt.date(2023, 1, 1), dt.date(2026, 1, 1))


def test_still_marked_is_in_that_state():
    reading = read("how many tickets are still marked open?", LATEST)
    assert reading.unknown == [] and [f.values for f in reading.filters] == [("open",)]


def test_one_value_beating_another_sets_them_side_by_side():
    reading = read("did web sales beat store sales in 2024?", LATEST)
    assert (reading.split.values, reading.unknown) == (("web", "store"), [])


def test_the_most_customers_placing_orders_counts_the_customers():
    reading = read("which region had the most customers placing orders in 2025?", LATEST)
    assert (labels(reading.measures), reading.has_rows["label"]) == (["Number of customers"], "Order")
    assert labels(read("which customers placed the most orders in 2025?", LATEST).measures) == ["Number of orders"]


def test_the_demo_models_words_for_returns_and_sales():
    got_back = read("number of returns we got back in march 2025", LATEST)
    assert got_back.unknown == [] and got_back.time_field["label"] == "Return time"
    value = read("what was the sales value of orders that got cancelled this year", LATEST)
    assert (labels(value.measures), [f.values for f in value.filters], value.unknown) == (
        ["Net revenue"], [("cancelled",)], [])
    assert read("How many customers came back in 2024", LATEST).unknown  # repeat customers: not returns


@pytest.mark.parametrize(("question", "start", "end"), [
    ("show monthly orders for 2023 through 2025", dt.date(2023, 1, 1), dt.date(2026, 1, 1)),
    ("quarterly revenue, 2022 through 2024", dt.date(2022, 1, 1), dt.date(2025, 1, 1)),
    ("revenue by month jan 2024 through 2025", dt.date(2024, 1, 1), dt.date(2026, 1, 1)),
])
def test_a_period_before_through_makes_it_a_stretch(question, start, end):
    reading = read(question, LATEST)
    assert (reading.unknown, period(reading)) == ([], ("between", start, end))


def test_a_number_after_a_quarter_is_a_year_only_where_a_year_ends_the_phrase():
    reading = read("which products sold in q2 50 units or more", LATEST)
    assert period(reading)[1] == dt.date(2025, 4, 1)  # (not Q2 2050)


def test_a_state_verb_without_a_state_is_not_passed_over():
    assert "flagged" in read("how many orders were flagged?", LATEST).unknown


def test_a_measure_named_in_full_keeps_its_own_rows():
    assert labels(read("units sold of returned products", LATEST).measures) == ["Units sold"]


def test_a_follow_up_naming_only_a_breakdown_keeps_the_earlier_measure():
    reading = follow("revenue in 2025", "which priority has the most?", LATEST)
    assert labels(reading.measures) == ["Net revenue"]  # (refused when drafted: revenue has no ticket priority)


# --- round N (fresh sets bz, ca, cb, cc) ----------------------------------------------------------------------

def test_instead_replaces_the_earlier_groups():
    reading = follow("return rate by category", "ok now split it by country instead", LATEST)
    assert labels(reading.dimensions) == ["Country"]
    assert labels(follow("return rate by category", "ok now split it by country", LATEST).dimensions) == [
        "Product category", "Country"]


@pytest.mark.parametrize("question", ["ten subcats that sold the most units",
                                      "show me the 10 subcategories that moved the most units"])
def test_n_groups_that_did_the_most(question):
    reading = read(question, LATEST)
    assert (reading.unknown, reading.limit, labels(reading.dimensions)) == ([], 10, ["Product subcategory"])


@pytest.mark.parametrize("question", ["how fast has our order count been rising each year? yoy %",
                                      "How has our monthly order volume changed over the course of 2025?"])
def test_more_ways_to_ask_for_change(question):
    reading = read(question, LATEST)
    assert reading.unknown == [] and "calculations" in plan(reading, SLICE).draft


def test_ordered_at_least_once_but_never_sent_anything_back():
    reading = read("Of the customers who have ordered at least once, how many have never sent anything back?", LATEST)
    assert (reading.unknown, reading.has_rows["label"], reading.lacks_rows["label"]) == ([], "Order", "Return")


@pytest.mark.parametrize("question", ["how many of this year's orders had nothing returned at all?",
                                      "of the web orders in q4, how many never had anything sent back?",
                                      "how many customers never had anything returned in 2024?",
                                      "how many customers never ordered in 2024?"])
def test_never_had_rows_beside_a_period_is_refused_on_never(question):
    # whose period it is (the counted records' or the rows never had) is not told by the words: refused, not guessed
    assert "never" in read(question, LATEST).unknown


def test_orders_that_had_nothing_returned():
    reading = read("how many orders had nothing returned?", LATEST)
    assert (reading.unknown, reading.had_none, reading.has_rows["label"]) == ([], True, "Return")


@pytest.mark.parametrize(("question", "kept"), [
    ("how many customers never placed a single web order?", "web"),  # the words after "a single" describe
    ("how many customers have ordered at least once a month this year?", "once"),  # how often: not passed over
])
def test_rewrites_keep_words_that_change_meaning(question, kept):
    reading = read(question, LATEST)
    assert kept in reading.unknown or any(kept in f.values for f in reading.filters)


def test_plus_growth_of_another_measure_is_not_the_first_ones_growth():
    assert read("revenue by year plus growth in order count", LATEST).unknown


@pytest.mark.parametrize(("question", "dimensions"), [
    ("break that down by country and show units instead", ["Product category", "Country"]),
    ("split it by country too, and units instead of revenue", ["Product category", "Country"]),
])
def test_instead_of_something_else_keeps_the_split_within(question, dimensions):
    assert labels(follow("revenue by category", question, LATEST).dimensions) == dimensions


@pytest.mark.parametrize("question", ["same but show all products ranked by units",
                                      "now rank every product by units, same period"])
def test_all_rows_asked_again_drop_the_earlier_length(question):
    assert follow("top 5 products by revenue this year", question, LATEST).limit is None


def test_is_that_higher_than_another_value_in_another_period_is_not_both_in_it():
    reading = follow("whats AOV for web orders in 2025", "is that higher than store in 2024?", LATEST)
    assert reading.split is None and reading.unknown  # (web in 2025 against store in 2024: not read, refused)


def test_is_that_higher_than_another_value_sets_both_side_by_side():
    reading = follow("whats AOV for web orders in 2025", "is that higher than marketplace?", LATEST)
    assert (reading.split.values, reading.unknown) == (("web", "marketplace"), [])


# --- round O (fresh sets cd, ce, cf, cg) ----------------------------------------------------------------------

@pytest.mark.parametrize(("question", "measure"), [
    ("How many customers who have ordered from us have never returned a single item?", "Number of customers"),
    ("our 5 best-selling products of 2025 by unit volume", "Units sold"),
    ("avg order val by channel", "Average order value"),
    ("2024's highest-revenue region?", "Net revenue"),
    ("revenue each year since 2021, plus the % increase on the previous year", "Net revenue"),
])
def test_round_o_wordings(question, measure):
    reading = read(question, LATEST)
    assert (reading.unknown, labels(reading.measures)) == ([], [measure])


def test_rise_or_fall_against_the_quarter_before_is_which_way():
    reading = read("did revenue rise or fall last quarter relative to the quarter before?", LATEST)
    assert reading.unknown == [] and reading.which_way
    assert plan(reading, SLICE).later_period is not None


def test_same_list_but_ranked_by_another_measure():
    reading = follow("top 5 products by revenue this year", "same list but ranked by units instead", LATEST)
    assert (reading.unknown, labels(reading.measures), reading.limit) == ([], ["Units sold"], 5)
    assert "but" in read("Revenue for every channel but web", LATEST).unknown  # (a negation: never passed over)
